"""Which changelog segments a partition's job reads, decided from file names alone.

The listing is the job's (through its object store); the rules are the ones the launch
applies, ``snapledger.core.coverage`` (shipped in the job's zip): the segments do not
overlap, are contiguous from the base LSN + 1 and reach the target; a file not named like
a segment is skipped with a warning (``track_changelog`` recorded it rejected). The job
checks again because the changelog may have changed since the launch, and because a job
can be started without one. All of it before Spark reads a byte.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from jobs.errors import ChangelogError
from jobs.layout import changelog_dir
from jobs.storage import ObjectStore
from snapledger.core.coverage import (
    ChangelogRange,
    CoverageError,
    changelog_range,
    segments_named,
)

_log = logging.getLogger(__name__)


def _warn_skipped(key: str) -> None:
    _log.warning(
        "skipping %s: not a segment file name (expected "
        "{first_lsn:020d}-{last_lsn:020d}.parquet with first <= last); track_changelog "
        "recorded it rejected",
        key,
    )


@dataclass(frozen=True)
class ChangelogPlan:
    """A partition's changelog range, and the bytes of each of its segments as listed."""

    range: ChangelogRange
    segment_bytes: dict[str, int]  # by segment key


def plan_partition(
    store: ObjectStore, stream: str, partition: int, base_lsn: int | None, target_lsn: int | None
) -> ChangelogPlan:
    """The segments covering (base_lsn, target]: base None = empty state, target None =
    the end of the contiguous run after the base. Raises ChangelogError naming the file."""
    listing = store.list_files(changelog_dir(stream, partition))
    listed = {stored.name: stored.size for stored in listing}
    try:
        segments = segments_named(stream, partition, listed, skipped=_warn_skipped)
        planned = changelog_range(stream, partition, segments, base_lsn, target_lsn)
    except CoverageError as exc:
        raise ChangelogError(str(exc)) from None
    return ChangelogPlan(planned, {s.key: listed[s.name] for s in planned.segments})
