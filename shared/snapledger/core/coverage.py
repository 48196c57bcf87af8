"""Which changelog segments replay a partition from its base LSN to a target: from names alone.

One rule for the launch (which refuses a request the changelog cannot serve) and for the
job (which plans what it reads: the changelog may have changed since the launch); the
job's zip carries this module (``infra.names.JOB_SHARED_MODULES``). Standard library only.

The records applied are those with ``base_lsn < lsn <= target``. The segments that hold
them must not overlap (no LSN is named by two of them), must be contiguous (each starts at
the previous one's last LSN + 1); the first must start at or before ``base_lsn + 1`` and
the last must reach the target. Segments wholly at or below the base are never read, so
their overlaps do not matter. With no target ("latest available") the range ends where the
contiguous run after the base ends: a segment after a gap is not readable yet (segments
may arrive out of order), and if nothing readable follows the base, the base is the state.
A bootstrap (no base) starts from empty state, LSN -1, so it needs the changelog from 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from snapledger.errors import InvalidRequestError
from snapledger.layout import SegmentLocation, lineage_changelog_prefix, parse_segment_name

EMPTY_STATE_LSN = -1  # the LSN of the state before any record: a bootstrap's base
# The job's ``--target-lsn`` for "no target": each partition's end of its contiguous run.
LATEST_AVAILABLE = "latest-available"


class CoverageError(InvalidRequestError):
    """The changelog cannot serve the range; the message names the file and the LSNs."""


@dataclass(frozen=True, slots=True)
class ChangelogRange:
    """What one partition replays: the records with ``base_lsn < lsn <= target_lsn`` of
    ``segments`` (contiguous, in LSN order, none wholly at or below the base)."""

    stream: str
    partition: int
    base_lsn: int  # EMPTY_STATE_LSN for a bootstrap
    target_lsn: int
    segments: tuple[SegmentLocation, ...]

    @property
    def records_at_most(self) -> int:
        """How many records the range can apply, from segment names alone: its LSN span
        (exact when LSNs are dense, as producers write them; an upper bound otherwise)."""
        return sum(
            max(0, min(s.last_lsn, self.target_lsn) - max(s.first_lsn, self.base_lsn + 1) + 1)
            for s in self.segments
        )


def segments_named(
    stream: str,
    partition: int,
    names: Iterable[str],
    *,
    skipped: Callable[[str], None] | None = None,
) -> list[SegmentLocation]:
    """The segments among ``names``: the keys under the partition's changelog folder, less
    the folder. Hadoop's hidden files (``_SUCCESS``, ``.crc``) and anything in a sub-folder
    are not the changelog's; any other name that is not a segment's (``segment-1.parquet``,
    a first LSN above the last) is skipped too, and handed to ``skipped`` (its key), since
    ``track_changelog`` recorded it rejected when it arrived: one misnamed file never
    blocks every later launch or job."""
    folder = lineage_changelog_prefix(stream, partition)
    segments = []
    for name in names:
        if not name or "/" in name or name.startswith(("_", ".")):
            continue
        bounds = parse_segment_name(name)
        if bounds is None or bounds[0] > bounds[1]:
            if skipped is not None:
                skipped(folder + name)
            continue
        segments.append(SegmentLocation(stream, partition, *bounds))
    return segments


def changelog_range(
    stream: str,
    partition: int,
    segments: Iterable[SegmentLocation],
    base_lsn: int | None,
    target_lsn: int | None,
) -> ChangelogRange:
    """The segments of ``stream``/``partition`` that replay (base_lsn, target_lsn], or
    raise CoverageError naming the segment at fault and the LSNs.

    ``base_lsn`` None is a bootstrap from empty state; ``target_lsn`` None is the end of
    the contiguous run after the base.
    """
    lineage = f"{stream}/{partition}"
    base = _base(base_lsn)
    if target_lsn is not None and target_lsn <= base:
        if target_lsn < base:
            raise CoverageError(
                f"{lineage}: target LSN {target_lsn} is below the base snapshot's LSN {base}: "
                'choose an older snapshot (from {"lsn": ...}) or a later target'
            )
        return ChangelogRange(stream, partition, base, base, ())  # the base is the state
    needed = sorted(
        (s for s in segments if s.last_lsn > base and _starts_by(s, target_lsn)),
        key=lambda s: (s.first_lsn, s.last_lsn),
    )
    run = _contiguous_run(needed, lineage, base_lsn, target_lsn)
    if not run:
        folder = lineage_changelog_prefix(stream, partition)
        if target_lsn is not None:
            raise CoverageError(
                f"{folder}: no segment holds LSNs {base + 1}..{target_lsn}; "
                + _unreachable(lineage, target_lsn)
            )
        if base_lsn is None:
            raise CoverageError(
                f"{folder}: no changelog segments to bootstrap {lineage} from: upload its "
                "segments there, from LSN 0, first"
            )
        return ChangelogRange(stream, partition, base, base, ())  # nothing readable after it
    reached = run[-1].last_lsn
    if target_lsn is not None and reached < target_lsn:
        raise CoverageError(
            f"{run[-1].key}: the changelog ends at LSN {reached} but the target is "
            f"{target_lsn}: LSNs {reached + 1}..{target_lsn} are missing; "
            + _unreachable(lineage, target_lsn)
        )
    target = reached if target_lsn is None else target_lsn
    return ChangelogRange(stream, partition, base, target, tuple(run))


def _contiguous_run(
    needed: list[SegmentLocation], lineage: str, base_lsn: int | None, target_lsn: int | None
) -> list[SegmentLocation]:
    """The segments from the base on, each starting where the previous one ends. An overlap
    is refused; a gap too, unless there is no target and something precedes it (the run
    of a latest-available range ends there, and with a base, may be empty)."""
    run: list[SegmentLocation] = []
    for segment in needed:
        expected = run[-1].last_lsn + 1 if run else _base(base_lsn) + 1
        if run and segment.first_lsn < expected:
            raise CoverageError(
                f"{segment.key}: overlaps {run[-1].name}: LSNs {segment.first_lsn}.."
                f"{min(run[-1].last_lsn, segment.last_lsn)} are in both segments; each LSN of "
                f"{lineage} must be in one segment only: delete or rewrite one of them"
            )
        if segment.first_lsn > expected:
            if target_lsn is None and (run or base_lsn is not None):
                break  # latest available: the readable changelog ends at the gap
            after = f" after {run[-1].name}" if run else ""
            raise CoverageError(
                f"{segment.key}: gap before this segment: LSNs {expected}.."
                f"{segment.first_lsn - 1} are missing{after}{_bootstrap_hint(base_lsn)}; "
                + _unreachable(lineage, target_lsn)
            )
        run.append(segment)
    return run


def _starts_by(segment: SegmentLocation, target_lsn: int | None) -> bool:
    return target_lsn is None or segment.first_lsn <= target_lsn


def _base(base_lsn: int | None) -> int:
    return EMPTY_STATE_LSN if base_lsn is None else base_lsn


def _bootstrap_hint(base_lsn: int | None) -> str:
    return " (a bootstrap needs the changelog from LSN 0)" if base_lsn is None else ""


def _unreachable(lineage: str, target_lsn: int | None) -> str:
    if target_lsn is None:
        return (
            f"upload {lineage}'s segments from LSN 0, or, if its log was trimmed, restore it "
            "from a snapshot instead"
        )
    return (
        f"so {lineage} cannot reach the target LSN {target_lsn}: pick an earlier target, "
        "a later snapshot, or upload the missing segments"
    )
