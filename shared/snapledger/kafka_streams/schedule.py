"""When a store partition's next snapshot is due: the snapshot sidecar's rule
(docs/kafka-streams.md, "Snapshots on a schedule"). Pure: no I/O, no clock; the sidecar
(``sidecar.py``) reads the changelog's end offsets and the time and asks it.

A partition is due when its changelog holds at least one offset past what its last snapshot
covered AND either at least ``every_records`` offsets past it, or at least ``every_seconds``
since that snapshot was made (a partition without one: since the sidecar started). An
unchanged partition is never due. Offsets are counted, not records: under ``exactly_once_v2``
transaction markers take offsets too, so the count is an upper bound of the records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_INT64

#: ``every_records``: a snapshot after at most this many changelog offsets (1..2^63-1).
MAX_EVERY_RECORDS = MAX_INT64
#: ``every_seconds``: a changed partition is snapshotted at least this often (1 s..7 days).
MIN_EVERY_SECONDS = 1
MAX_EVERY_SECONDS = 7 * 86_400
#: ``poll_seconds``: how often the sidecar reads the end offsets (0.1 s..1 hour).
MIN_POLL_SECONDS = 0.1
MAX_POLL_SECONDS = 3_600.0
DEFAULT_POLL_SECONDS = 10.0


@dataclass(frozen=True)
class PartitionMark:
    """What the sidecar knows of a partition: ``covered_to`` is the first changelog offset
    its last snapshot does not cover (LSN + 1; the log start without a snapshot; the end
    offset a run found nothing new below), ``lsn`` that snapshot's LSN (None: none yet) and
    ``since`` when it was made (by the sidecar: when the poll that started its pass began; from
    the ledger: its changelog read; without one: when the sidecar started)."""

    partition: int
    covered_to: int
    since: datetime
    lsn: int | None = None

    def snapshotted(self, lsn: int, at: datetime) -> PartitionMark:
        """A snapshot at ``lsn`` was made at ``at``."""
        return replace(self, covered_to=lsn + 1, lsn=lsn, since=at)

    def nothing_new_below(self, end_offset: int) -> PartitionMark:
        """A run found no record below ``end_offset`` that the snapshot lacks (markers only):
        those offsets no longer count, the time does not restart."""
        return replace(self, covered_to=max(self.covered_to, end_offset))


@dataclass(frozen=True)
class SnapshotSchedule:
    """Snapshot a partition every ``every_records`` changelog offsets or every
    ``every_seconds`` with a change, whichever first (None: that trigger is off; one is
    needed)."""

    every_records: int | None = None
    every_seconds: int | None = None

    def __post_init__(self) -> None:
        if self.every_records is None and self.every_seconds is None:
            raise InvalidRequestError(
                "a snapshot schedule needs every_records, every_seconds or both "
                "(--every-records N, --every-seconds T); without either, snapshot on demand"
            )
        _check_int("every_records", self.every_records, 1, MAX_EVERY_RECORDS, "changelog records")
        _check_int("every_seconds", self.every_seconds, MIN_EVERY_SECONDS, MAX_EVERY_SECONDS, "s")

    def records_since(self, mark: PartitionMark, end_offset: int) -> int:
        """Changelog offsets written since the partition's last snapshot."""
        return max(0, end_offset - mark.covered_to)

    def is_due(self, mark: PartitionMark, end_offset: int, now: datetime) -> bool:
        new = self.records_since(mark, end_offset)
        if new == 0:
            return False
        if self.every_records is not None and new >= self.every_records:
            return True
        return self.every_seconds is not None and now - mark.since >= timedelta(
            seconds=self.every_seconds
        )

    def due(
        self, marks: Mapping[int, PartitionMark], end_offsets: Mapping[int, int], now: datetime
    ) -> list[int]:
        """The partitions due now, ascending; a partition without an end offset is not."""
        return sorted(
            p
            for p, mark in marks.items()
            if p in end_offsets and self.is_due(mark, end_offsets[p], now)
        )


def check_poll_seconds(poll_seconds: float) -> float:
    if isinstance(poll_seconds, bool) or not MIN_POLL_SECONDS <= poll_seconds <= MAX_POLL_SECONDS:
        raise InvalidRequestError(
            f"poll_seconds {poll_seconds!r}: the sidecar reads the changelog's end offsets every "
            f"{MIN_POLL_SECONDS}..{MAX_POLL_SECONDS:g} seconds; give a value in that range"
        )
    return float(poll_seconds)


def _check_int(name: str, value: int | None, low: int, high: int, unit: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRequestError(
            f"{name} {value!r}: a snapshot is due after {low}..{high:,} {unit} (a whole "
            f"number); give one in that range or leave {name} out"
        )
