"""Which changelog segments a partition's job reads, decided from file names alone.

The listing is the job's (through its object store); the rule is the one the launch
applies, ``snapledger.core.coverage`` (shipped in the job's zip): segments must not
overlap, must be contiguous from the base LSN + 1, and must reach the target. The job
checks again because the changelog may have changed since the launch, and because a job
can be started without one. All of it before Spark reads a byte.
"""

from __future__ import annotations

from jobs.errors import ChangelogError
from jobs.layout import changelog_dir, parse_segment_name
from jobs.storage import ObjectStore
from snapledger.core.coverage import ChangelogRange, CoverageError, changelog_range
from snapledger.layout import SegmentLocation


def plan_partition(
    store: ObjectStore, stream: str, partition: int, base_lsn: int | None, target_lsn: int | None
) -> ChangelogRange:
    """The segments covering (base_lsn, target]: base None = empty state, target None =
    the end of the contiguous run after the base. Raises ChangelogError naming the file."""
    segments = list_segments(store, stream, partition)
    try:
        return changelog_range(stream, partition, segments, base_lsn, target_lsn)
    except CoverageError as exc:
        raise ChangelogError(str(exc)) from None


def list_segments(store: ObjectStore, stream: str, partition: int) -> list[SegmentLocation]:
    """The partition's segments, in listing order; fails on a misnamed file."""
    folder = changelog_dir(stream, partition)
    segments = []
    for stored in store.list_files(folder):
        if stored.name.startswith(("_", ".")):
            continue  # Hadoop's hidden files (_SUCCESS, .crc) are not data
        bounds = parse_segment_name(stored.name)
        if bounds is None or bounds[0] > bounds[1]:
            raise ChangelogError(
                f"{folder}{stored.name}: not a segment file name; expected "
                f"{{first_lsn:020d}}-{{last_lsn:020d}}.parquet with first <= last"
            )
        segments.append(SegmentLocation(stream, partition, *bounds))
    return segments
