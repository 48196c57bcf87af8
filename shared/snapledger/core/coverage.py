"""Does the changelog cover (base LSN, target] with no gap? Pure; the caller lists."""

from __future__ import annotations

from collections.abc import Iterable

from snapledger.errors import InvalidRequestError
from snapledger.layout import SegmentLocation


class CoverageError(InvalidRequestError):
    """The changelog cannot serve the requested range; the message says which LSNs lack."""


def contiguous_end(segments: Iterable[SegmentLocation], after_lsn: int | None) -> int | None:
    """The highest LSN up to which the changelog is complete from ``after_lsn + 1``.

    ``after_lsn`` None means "from the first segment" (a bootstrap from empty state).
    Returns None when not even the first needed LSN is present.
    """
    ordered = sorted(segments, key=lambda s: (s.first_lsn, s.last_lsn))
    if not ordered:
        return None
    need = ordered[0].first_lsn if after_lsn is None else after_lsn + 1
    end: int | None = None
    for segment in ordered:
        if segment.last_lsn < need:
            continue  # wholly before what we need (already in the base snapshot)
        if segment.first_lsn > need:
            break  # a gap
        end = segment.last_lsn
        need = segment.last_lsn + 1
    return end


def check_covers(
    segments: list[SegmentLocation], lineage: str, base_lsn: int | None, target_lsn: int | None
) -> int:
    """The target LSN to use (given, or the end of the contiguous changelog), or raise.

    ``base_lsn`` None is a bootstrap: the changelog must run gap-free from LSN 0 (a log
    trimmed at its start no longer holds the whole state; restore from a snapshot then).
    """
    if base_lsn is not None and target_lsn is not None and target_lsn <= base_lsn:
        return _not_after_base(lineage, base_lsn, target_lsn)
    end = contiguous_end(segments, -1 if base_lsn is None else base_lsn)
    if target_lsn is None:
        if end is not None:
            return end
        if base_lsn is not None:
            return base_lsn  # nothing after the snapshot: the state is the snapshot itself
        if segments:
            first = min(s.first_lsn for s in segments)
            raise CoverageError(
                f"the changelog of {lineage} starts at LSN {first}, not 0: a bootstrap needs "
                "the whole log; restore from a snapshot instead"
            )
        raise CoverageError(
            f"{lineage} has no changelog segments: upload segments under "
            "changelog/{stream}/{partition}/ before bootstrapping"
        )
    if end is None or target_lsn > end:
        start = "LSN 0" if base_lsn is None else f"LSN {base_lsn + 1}"
        complete = "nowhere" if end is None else f"only up to LSN {end}"
        missing_from = (base_lsn + 1 if base_lsn is not None else 0) if end is None else end + 1
        raise CoverageError(
            f"the changelog of {lineage} is complete from {start} {complete}, so it cannot "
            f"reach the target LSN {target_lsn}: LSNs {missing_from}..{target_lsn} are missing "
            "or behind a gap; pick an earlier target, a later snapshot, or upload the segments"
        )
    return target_lsn


def _not_after_base(lineage: str, base_lsn: int, target_lsn: int) -> int:
    if target_lsn == base_lsn:
        return target_lsn  # the snapshot itself is the state at the target: no tail needed
    raise CoverageError(
        f"target LSN {target_lsn} is below the base snapshot's LSN {base_lsn} on {lineage}: "
        "choose an older snapshot (as_of_lsn) or a later target"
    )
