"""Which changelog segments a partition's job reads, checked from file names alone.

A job on a partition applies the records in (base_lsn, target]. The segments that hold
them must be contiguous (segment n+1 starts at segment n's last LSN + 1), must not
overlap, must start at or before base_lsn + 1 and must reach the target. All of this is
decided from the segment names, before Spark reads a byte: pure functions over listings.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from jobs.errors import ChangelogError
from jobs.layout import changelog_dir, parse_segment_name
from jobs.storage import ObjectStore

_log = logging.getLogger(__name__)
EMPTY_STATE_LSN = -1  # the LSN of the state before any record: a bootstrap's base


@dataclass(frozen=True, slots=True, order=True)
class Segment:
    """One changelog segment file: LSNs first..last of one partition."""

    first_lsn: int
    last_lsn: int
    key: str

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """What one partition's job applies: records with base_lsn < lsn <= target_lsn."""

    partition: int
    base_lsn: int
    target_lsn: int
    segments: tuple[Segment, ...]

    @property
    def records_at_most(self) -> int:
        """How many records the plan can apply, from segment names alone: its LSN span
        (exact when LSNs are dense, as producers write them; an upper bound otherwise)."""
        return sum(
            max(0, min(s.last_lsn, self.target_lsn) - max(s.first_lsn, self.base_lsn + 1) + 1)
            for s in self.segments
        )


def list_segments(store: ObjectStore, stream: str, partition: int) -> list[Segment]:
    """The partition's segments, sorted by first LSN. A file not named like a segment is
    skipped with a warning (track_changelog recorded it rejected when it arrived)."""
    folder = changelog_dir(stream, partition)
    segments = []
    for stored in store.list_files(folder):
        if stored.name.startswith(("_", ".")):
            continue  # Hadoop's hidden files (_SUCCESS, .crc) are not data
        bounds = parse_segment_name(stored.name)
        if bounds is None or bounds[0] > bounds[1]:
            _log.warning(
                "skipping %s%s: not a segment file name (expected "
                "{first_lsn:020d}-{last_lsn:020d}.parquet with first <= last)",
                folder,
                stored.name,
            )
            continue
        segments.append(Segment(bounds[0], bounds[1], folder + stored.name))
    return sorted(segments)


def plan_partition(
    partition: int,
    segments: Sequence[Segment],
    base_lsn: int,
    target_lsn: int | None,
    folder: str,
) -> PartitionPlan:
    """The segments covering (base_lsn, target]; target None = end of the contiguous run."""
    if target_lsn is not None and target_lsn < base_lsn:
        raise ChangelogError(
            f"partition {partition}: target LSN {target_lsn} is below the base snapshot's "
            f"LSN {base_lsn}"
        )
    needed = [
        s
        for s in sorted(segments)
        if s.last_lsn > base_lsn and (target_lsn is None or s.first_lsn <= target_lsn)
    ]
    _check_no_overlap(needed)
    if not needed:
        if target_lsn is None and base_lsn == EMPTY_STATE_LSN:
            raise ChangelogError(f"{folder}: no changelog segments to bootstrap from")
        target = base_lsn if target_lsn is None else target_lsn
        if target > base_lsn:
            raise ChangelogError(f"{folder}: no segment holds LSNs {base_lsn + 1}..{target}")
        return PartitionPlan(partition, base_lsn, base_lsn, ())
    run = _contiguous_run(needed, base_lsn, stop_at_gap=target_lsn is None)
    target = run[-1].last_lsn if target_lsn is None else target_lsn
    if run[-1].last_lsn < target:
        raise ChangelogError(
            f"{run[-1].key}: the changelog ends at LSN {run[-1].last_lsn} but the target is "
            f"{target}: LSNs {run[-1].last_lsn + 1}..{target} are missing"
        )
    return PartitionPlan(partition, base_lsn, target, tuple(run))


def _check_no_overlap(segments: Sequence[Segment]) -> None:
    for earlier, later in pairwise(segments):
        if later.first_lsn <= earlier.last_lsn:
            raise ChangelogError(
                f"{later.key}: overlaps {earlier.name}: LSNs {later.first_lsn}.."
                f"{min(earlier.last_lsn, later.last_lsn)} are in both segments"
            )


def _contiguous_run(
    segments: Sequence[Segment], base_lsn: int, *, stop_at_gap: bool
) -> list[Segment]:
    """The segments from base_lsn + 1 on; a gap fails, or ends the run if ``stop_at_gap``."""
    first = segments[0]
    if first.first_lsn > base_lsn + 1:
        hint = " (a bootstrap needs the changelog from LSN 0)" if base_lsn < 0 else ""
        raise ChangelogError(
            f"{first.key}: gap before this segment: LSNs {base_lsn + 1}..{first.first_lsn - 1}"
            f" are missing{hint}"
        )
    run = [first]
    for segment in segments[1:]:
        if segment.first_lsn != run[-1].last_lsn + 1:
            if stop_at_gap:
                break  # latest-available ends where the contiguous changelog ends
            raise ChangelogError(
                f"{segment.key}: gap before this segment: LSNs {run[-1].last_lsn + 1}.."
                f"{segment.first_lsn - 1} are missing after {run[-1].name}"
            )
        run.append(segment)
    return run
