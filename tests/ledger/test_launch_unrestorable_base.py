"""A job's base that is not REGISTERED is refused before anything is recorded (issue 30):
the lineage would refuse to pin it, and the job used to be recorded FAILED for it."""

from __future__ import annotations

import pytest

from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.job_kinds import JobKind
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.models.requests import LaunchRequest
from snapledger.services.launch import LaunchDeps, job_id_for, launch
from tests.support import FakeRunner, write_history, write_segments

S = SnapshotStatus


@pytest.fixture
def deps(ledger, store, clock) -> LaunchDeps:
    jobs = DynamoJobStore(ledger.table_name, client=ledger.client)
    return LaunchDeps(ledger=ledger, jobs=jobs, runner=FakeRunner(), store=store, clock=clock)


@pytest.fixture
def history(ledger, store, clock):
    """orders/3: LSN 1 DELETED, 2 EXPIRING, 3 REJECTED, 4 REGISTERED (the latest)."""
    write_segments(store, "orders", 3, (0, 99))
    statuses = [S.DELETED, S.EXPIRING, S.REJECTED, S.REGISTERED]
    return write_history(ledger, "orders", 3, statuses, clock.now())


def record_lineage(record):
    return LineageId(stream=record.stream, partition=record.partition)


def from_snapshot(snapshot_id: str) -> LaunchRequest:
    return LaunchRequest.model_validate(
        {
            "action": "restore",
            "stream": "orders",
            "partition": 3,
            "from": {"snapshot_id": snapshot_id},
        }
    )


@pytest.mark.parametrize(
    ("lsn", "status", "why"),
    [
        (1, "DELETED", "GC deleted its files"),
        (2, "EXPIRING", "GC is deleting its files"),
        (3, "REJECTED", "registration rejected it"),
    ],
)
def test_a_base_that_is_not_registered_is_refused_and_nothing_is_recorded(
    deps, history, lsn, status, why
):
    record = history[lsn - 1]
    request_id = f"req-{status}"
    with pytest.raises(InvalidRequestError) as refused:
        launch(from_snapshot(record.snapshot_id), request_id=request_id, deps=deps)
    message = str(refused.value)
    assert f"{record.snapshot_id} of orders/3 (LSN {lsn}) is {status}: {why}" in message
    assert "only a REGISTERED snapshot" in message
    assert deps.jobs.get(job_id_for(JobKind.RESTORE, request_id)) is None  # no FAILED job
    assert not deps.runner.started
    events = deps.ledger.list_events(record_lineage(record), limit=100).items
    assert not [e.type for e in events if e.type.startswith("Job")]  # nothing on the lineage


def test_an_unknown_snapshot_is_refused_as_not_found(deps, history):
    with pytest.raises(NotFoundError, match="has no snapshot 01KMZZZZZZZZZZZZZZZZZZZZZZ"):
        launch(from_snapshot("01KMZZZZZZZZZZZZZZZZZZZZZZ"), request_id="req-unknown", deps=deps)
    assert deps.jobs.get(job_id_for(JobKind.RESTORE, "req-unknown")) is None
    assert not deps.runner.started


def test_the_registered_snapshot_of_the_same_lineage_still_restores(deps, history):
    result = launch(from_snapshot(history[3].snapshot_id), request_id="req-ok", deps=deps)
    assert result.job.state.value == "SUBMITTED" and deps.runner.started


BROKEN = ("part-00000.parquet: missing",)


@pytest.fixture
def broken_latest(ledger, store, clock):
    """orders/3: LSN 1 and 2 REGISTERED, 3 REGISTERED but found broken (the latest)."""
    write_segments(store, "orders", 3, (0, 99))
    statuses = [S.REGISTERED, S.REGISTERED, S.REGISTERED]
    return write_history(ledger, "orders", 3, statuses, clock.now(), broken={3: BROKEN})


def test_a_snapshot_found_broken_is_refused_by_id_and_nothing_is_recorded(deps, broken_latest):
    broken = broken_latest[2]
    with pytest.raises(InvalidRequestError) as refused:
        launch(from_snapshot(broken.snapshot_id), request_id="req-broken", deps=deps)
    message = str(refused.value)
    assert f"{broken.snapshot_id} of orders/3 (LSN 3) was found broken" in message
    assert "part-00000.parquet: missing" in message and "Start from another snapshot" in message
    assert deps.jobs.get(job_id_for(JobKind.RESTORE, "req-broken")) is None
    assert not deps.runner.started
    events = deps.ledger.list_events(record_lineage(broken), limit=100).items
    assert not [e.type for e in events if e.type.startswith("Job")]


@pytest.mark.parametrize("selector", ["latest", {"lsn": 3}, {"time": "2100-01-01T00:00:00Z"}])
def test_latest_an_lsn_or_a_time_pass_over_a_broken_snapshot(deps, broken_latest, selector):
    request = LaunchRequest.model_validate(
        {"action": "restore", "stream": "orders", "partition": 3, "from": selector}
    )
    result = launch(request, request_id=f"req-{selector}", deps=deps)

    [plan] = result.job.partitions
    assert result.job.state.value == "SUBMITTED"
    assert (plan.base_snapshot_id, plan.base_lsn) == (broken_latest[1].snapshot_id, 2)


def test_an_lsn_with_only_broken_snapshots_at_or_below_is_not_found(deps, ledger, store, clock):
    write_segments(store, "orders", 3, (0, 99))
    statuses = [S.REGISTERED, S.REGISTERED]
    write_history(ledger, "orders", 3, statuses, clock.now(), broken={1: BROKEN})
    request = LaunchRequest.model_validate(
        {"action": "restore", "stream": "orders", "partition": 3, "from": {"lsn": 1}}
    )
    with pytest.raises(NotFoundError, match=r"no registered snapshot \(not found broken\) at"):
        launch(request, request_id="req-none", deps=deps)
