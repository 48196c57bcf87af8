"""The snapshot sidecar's rule (``kafka_streams/schedule.py``): which store partitions are
due, and the bounds of its numbers (docs/kafka-streams.md, "Snapshots on a schedule")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from snapledger.cli.main import main
from snapledger.errors import InvalidRequestError
from snapledger.kafka_streams.schedule import (
    MAX_EVERY_RECORDS,
    MAX_EVERY_SECONDS,
    PartitionMark,
    SnapshotSchedule,
    check_poll_seconds,
)

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _mark(covered_to: int = 100, since: datetime = T0, lsn: int | None = 99) -> PartitionMark:
    return PartitionMark(0, covered_to=covered_to, since=since, lsn=lsn)


def test_a_partition_is_due_once_every_records_offsets_follow_its_snapshot():
    # Given a snapshot at LSN 99 and a schedule of every 10 records
    schedule = SnapshotSchedule(every_records=10)
    # Then 9 records later it is not due, 10 later it is
    assert not schedule.is_due(_mark(), 109, T0)
    assert schedule.is_due(_mark(), 110, T0)
    assert schedule.records_since(_mark(), 110) == 10


def test_a_changed_partition_is_due_once_every_seconds_passed():
    schedule = SnapshotSchedule(every_seconds=60)
    assert not schedule.is_due(_mark(), 101, T0 + timedelta(seconds=59))
    assert schedule.is_due(_mark(), 101, T0 + timedelta(seconds=60))


def test_an_unchanged_partition_is_never_due():
    # Given both triggers and a partition with nothing after its snapshot, a long time on
    schedule = SnapshotSchedule(every_records=1, every_seconds=1)
    later = T0 + timedelta(days=30)
    # Then it is not due (nor when the end offset reads below what the snapshot covers)
    assert not schedule.is_due(_mark(), 100, later)
    assert not schedule.is_due(_mark(), 50, later)
    assert schedule.records_since(_mark(), 50) == 0


def test_whichever_trigger_comes_first_makes_it_due():
    schedule = SnapshotSchedule(every_records=1000, every_seconds=300)
    assert schedule.is_due(_mark(), 1100, T0)  # records
    assert schedule.is_due(_mark(), 101, T0 + timedelta(seconds=300))  # time
    assert not schedule.is_due(_mark(), 101, T0 + timedelta(seconds=299))


def test_due_lists_only_the_due_partitions_with_an_end_offset():
    schedule = SnapshotSchedule(every_records=5)
    marks = {p: PartitionMark(p, covered_to=0, since=T0) for p in range(4)}
    ends = {0: 5, 1: 4, 2: 0}  # partition 3: no end offset read
    assert schedule.due(marks, ends, T0) == [0]


def test_a_partition_without_snapshot_counts_from_the_log_start_and_the_sidecar_start():
    # Given no snapshot yet: covered_to is the log start, since the sidecar's start
    mark = PartitionMark(2, covered_to=40, since=T0)
    assert not SnapshotSchedule(every_records=10).is_due(mark, 49, T0)
    assert SnapshotSchedule(every_records=10).is_due(mark, 50, T0)
    assert SnapshotSchedule(every_seconds=5).is_due(mark, 41, T0 + timedelta(seconds=5))


def test_a_snapshot_restarts_both_counts():
    schedule = SnapshotSchedule(every_records=10, every_seconds=60)
    later = T0 + timedelta(seconds=120)
    mark = _mark().snapshotted(lsn=129, at=later)
    assert (mark.covered_to, mark.lsn, mark.since) == (130, 129, later)
    assert not schedule.is_due(mark, 131, later + timedelta(seconds=59))
    assert schedule.is_due(mark, 131, later + timedelta(seconds=60))


def test_offsets_a_run_found_empty_no_longer_count_but_the_time_does_not_restart():
    # Given a run found nothing new below end offset 103 (transaction markers only)
    schedule = SnapshotSchedule(every_records=3, every_seconds=60)
    mark = _mark().nothing_new_below(103)
    # Then those 3 offsets do not make it due again, and the time still counts from T0
    assert (mark.covered_to, mark.lsn, mark.since) == (103, 99, T0)
    assert not schedule.is_due(mark, 103, T0 + timedelta(days=1))
    assert schedule.is_due(mark, 104, T0 + timedelta(seconds=60))
    assert _mark(covered_to=200).nothing_new_below(150).covered_to == 200


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({}, "needs every_records, every_seconds or both"),
        ({"every_records": 0}, "every_records 0: a snapshot is due after 1..9,223,372,036,854"),
        ({"every_records": MAX_EVERY_RECORDS + 1}, "every_records 9223372036854775808"),
        ({"every_records": 2.5}, "every_records 2.5"),
        ({"every_records": True}, "every_records True"),
        ({"every_seconds": 0}, "every_seconds 0: a snapshot is due after 1..604,800 s"),
        ({"every_seconds": MAX_EVERY_SECONDS + 1}, "every_seconds 604801"),
    ],
)
def test_out_of_bounds_schedules_are_refused_saying_the_range(kwargs, says):
    with pytest.raises(InvalidRequestError) as refused:
        SnapshotSchedule(**kwargs)
    assert says in str(refused.value)


def test_the_bounds_themselves_are_accepted():
    SnapshotSchedule(every_records=1, every_seconds=1)
    SnapshotSchedule(every_records=MAX_EVERY_RECORDS, every_seconds=MAX_EVERY_SECONDS)
    assert check_poll_seconds(0.1) == 0.1
    assert check_poll_seconds(3600) == 3600.0


@pytest.mark.parametrize("poll", [0.05, 3600.5, -1, True])
def test_poll_seconds_out_of_bounds_is_refused(poll):
    with pytest.raises(InvalidRequestError, match=r"every 0.1..3600 seconds"):
        check_poll_seconds(poll)


def _snapshot(*more: str) -> int:
    common = ["--bootstrap-servers", "127.0.0.1:1", "--application-id", "a", "--store", "totals"]
    return main(["kafka-streams", "snapshot", *common, "--root", "file:///tmp/x", *more])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--every-records", "0"], "Invalid value for '--every-records'"),
        (["--every-seconds", "604801"], "Invalid value for '--every-seconds'"),
        (["--every-seconds", "5", "--poll-seconds", "0.01"], "Invalid value for '--poll-seconds'"),
        (["--poll-seconds", "5"], "give --every-records N and/or --every-seconds T with it"),
    ],
)
def test_the_cli_refuses_a_bad_schedule_before_it_reaches_kafka(
    args, says, capsys: pytest.CaptureFixture[str]
):
    assert _snapshot(*args) == 2
    assert says in capsys.readouterr().err
