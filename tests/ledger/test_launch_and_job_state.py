"""Launching jobs and recording their states, on both DynamoDB backends."""

from __future__ import annotations

from dataclasses import replace

import pytest

from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.core.coverage import CoverageError
from snapledger.core.job_sizing import JobSize, PartitionInput, Worker
from snapledger.core.jobs import advance_job
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.layout import segment_key
from snapledger.models.jobs import JobResources, JobState, WorkerSize
from snapledger.models.ledger import LineageId, snapshot_sort_key
from snapledger.models.requests import LaunchRequest
from snapledger.services.job_state import record_job_state, update_job
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import FakeRunner, write_segments, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def runner():
    return FakeRunner()


@pytest.fixture
def deps(ledger, store, clock, runner):
    return LaunchDeps(
        ledger=ledger,
        jobs=DynamoJobStore(ledger.table_name, client=ledger.client),
        runner=runner,
        store=store,
        clock=clock,
    )


@pytest.fixture
def latest(ledger, store, clock):
    key = write_snapshot(store, lsn=99)
    write_segments(store, "orders", 3, (0, 99), (100, 199), (200, 299))
    return register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)


def restore(**kw):
    return LaunchRequest.model_validate(
        {"action": "restore", "stream": "orders", "partition": 3, "from": "latest", **kw}
    )


def events(ledger):
    return [e.type for e in ledger.list_events(ORDERS_3, limit=1000).items]


def pins(ledger, latest):
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(99, latest.snapshot_id))
    return [p.job_id for p in record.pins]


def test_restore_latest_pins_starts_once_and_answers_what_it_resolved(deps, ledger, latest, runner):
    # When a restore of the latest snapshot is launched
    result = launch(restore(), request_id="req-1", deps=deps)
    # Then one run started, from the latest snapshot to the end of the changelog
    job = result.job
    assert result.created and job.state is JobState.SUBMITTED
    assert list(runner.started) == [job.job_id]
    [plan] = job.partitions
    assert (plan.base_snapshot_id, plan.base_lsn, plan.target_lsn) == (latest.snapshot_id, 99, 299)
    assert plan.base_prefix.endswith(f"00000000000000000099-{latest.snapshot_id}/")
    # and the base is pinned, with every step in the ledger
    assert pins(ledger, latest) == [job.job_id]
    assert events(ledger)[-3:] == ["JobRequested", "SnapshotPinned", "JobStateChanged"]


def test_the_same_request_twice_starts_one_job(deps, ledger, latest, runner):
    first = launch(restore(), request_id="req-1", deps=deps)
    second = launch(restore(), request_id="req-1", deps=deps)
    assert not second.created and second.job.job_id == first.job.job_id
    assert len(runner.started) == 1
    assert events(ledger).count("JobRequested") == 1


def test_a_file_in_the_changelog_not_named_like_a_segment_is_skipped(deps, store, latest):
    # track_changelog recorded it rejected on arrival; it must not block every launch
    # (docs/changelog-format.md), and the job skips it the same way.
    store.put("changelog/orders/3/segment-7.parquet", b"")
    result = launch(restore(), request_id="req-misnamed", deps=deps)
    assert result.created and result.job.state.value == "SUBMITTED"


@pytest.mark.parametrize(
    ("segment", "target", "message"),
    [
        (
            (400, 499),
            450,
            r"changelog/orders/3/0+400-0+499\.parquet: gap before this segment: "
            r"LSNs 300\.\.399 are missing after 0+200-0+299\.parquet",
        ),
        # The job refuses to read LSNs named by two segments, so the launch refuses
        # first rather than start a run that must fail (docs/changelog-format.md).
        *(
            (
                (150, 249),
                target,
                r"changelog/orders/3/0+150-0+249\.parquet: overlaps 0+100-0+199\.parquet: "
                r"LSNs 150\.\.199 are in both segments",
            )
            for target in (None, 250)
        ),
    ],
)
def test_a_changelog_that_cannot_serve_the_range_is_refused_and_nothing_is_written(
    deps, ledger, store, latest, runner, segment, target, message
):
    write_segments(store, "orders", 3, segment)
    before = events(ledger)
    with pytest.raises(CoverageError, match=message):
        launch(restore(target_lsn=target), request_id="req-refused", deps=deps)
    assert events(ledger) == before
    assert deps.jobs.list_jobs().items == [] and runner.started == {}


def test_restore_of_a_lineage_without_snapshots_says_to_bootstrap(deps):
    with pytest.raises(NotFoundError, match="bootstrap"):
        launch(restore(partition=7), request_id="r", deps=deps)


def test_bootstrap_needs_no_snapshot(deps, store):
    write_segments(store, "orders", 5, (0, 49), (50, 99))
    request = LaunchRequest.model_validate(
        {"action": "bootstrap", "stream": "orders", "partitions": [5]}
    )
    job = launch(request, request_id="boot", deps=deps).job
    assert [(p.partition, p.base_lsn, p.target_lsn) for p in job.partitions] == [(5, None, 99)]


def sized_segments(store) -> None:
    """The fixture's segments again, each of its own size: 0-99 below the base."""
    for (first, last), size in {(0, 99): 1000, (100, 199): 30, (200, 299): 500}.items():
        store.put(segment_key("orders", 3, first, last), b"s" * size)


def base_bytes(ledger, latest) -> int:
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(99, latest.snapshot_id))
    assert record.total_bytes > 0
    return record.total_bytes


@pytest.mark.parametrize(("target", "changes"), [(None, 30 + 500), (199, 30), (250, 30 + 500)])
def test_the_runner_is_told_the_bases_bytes_and_the_in_range_segments_bytes(
    deps, ledger, store, latest, runner, target, changes
):
    sized_segments(store)
    job = launch(restore(target_lsn=target), request_id=f"req-{target}", deps=deps).job
    expected = PartitionInput(base_bytes=base_bytes(ledger, latest), changes_bytes=changes)
    assert runner.started[job.job_id].inputs == {3: expected}


def test_a_bootstrap_reads_every_segment_and_no_base(deps, store, runner):
    write_segments(store, "orders", 5, (0, 49), (50, 99))
    request = LaunchRequest.model_validate(
        {"action": "bootstrap", "stream": "orders", "partitions": [5]}
    )
    job = launch(request, request_id="boot", deps=deps).job
    assert runner.started[job.job_id].inputs == {5: PartitionInput(0, 2 * len(b"segment"))}


class CrashingRunner(FakeRunner):
    def start(self, spec):
        raise RuntimeError("the function timed out before the run started")


def test_a_resumed_launch_measures_the_input_again_from_the_recorded_plan(
    deps, ledger, store, latest, runner
):
    sized_segments(store)
    crashing = LaunchDeps(**{**deps.__dict__, "runner": CrashingRunner()})
    with pytest.raises(RuntimeError):
        launch(restore(), request_id="req-crash", deps=crashing)  # planned: LSNs 100..299
    write_segments(store, "orders", 3, (300, 399))  # arrived since: not in the plan
    job = launch(restore(), request_id="req-crash", deps=deps).job
    assert job.partitions[0].target_lsn == 299
    expected = PartitionInput(base_bytes(ledger, latest), 30 + 500)
    assert runner.started[job.job_id].inputs == {3: expected}


def test_a_refused_start_is_recorded_failed_with_its_cause_and_unpins(deps, ledger, latest):
    deps = LaunchDeps(**{**deps.__dict__, "runner": FakeRunner(refuse="AccessDenied: no PassRole")})
    result = launch(restore(), request_id="req-x", deps=deps)
    assert result.job.state is JobState.FAILED
    assert "no PassRole" in result.job.failure_reason
    assert pins(ledger, latest) == []
    assert events(ledger)[-2:] == ["JobFailed", "SnapshotUnpinned"]


def state(deps, ledger, clock, run_id, job_id, value, reason=None):
    return record_job_state(
        run_id=run_id,
        job_name=job_id,
        state=value,
        reason=reason,
        jobs=deps.jobs,
        ledger=ledger,
        clock=clock,
    )


def test_success_unpins_and_late_or_repeated_states_change_nothing(deps, ledger, clock, latest):
    job = launch(restore(), request_id="req-1", deps=deps).job
    for value in ("RUNNING", "SUCCESS"):
        assert state(deps, ledger, clock, job.run_id, job.job_id, value).recorded
    after = events(ledger)
    assert after[-2:] == ["JobSucceeded", "SnapshotUnpinned"]
    assert pins(ledger, latest) == []
    # redelivered and reordered events
    for value in ("SUCCESS", "RUNNING", "SCHEDULED", "FAILED"):
        assert not state(deps, ledger, clock, job.run_id, job.job_id, value).recorded
    assert events(ledger) == after
    assert deps.jobs.get(job.job_id).state is JobState.SUCCESS


def test_reordered_delivery_ends_in_the_same_state_as_in_order(deps, ledger, clock, latest):
    job = launch(restore(), request_id="req-1", deps=deps).job
    for value in ("SUCCESS", "RUNNING", "PENDING"):
        state(deps, ledger, clock, job.run_id, job.job_id, value)
    assert deps.jobs.get(job.job_id).state is JobState.SUCCESS
    assert pins(ledger, latest) == []
    head = ledger.get_head(ORDERS_3)
    assert head.active_jobs == {} and job.job_id in head.finished_jobs


def test_a_late_success_after_a_recorded_failure_flips_neither_the_job_nor_its_lineage(
    deps, ledger, clock, latest
):
    # Given a job recorded FAILED (a dead local process) on its item, and a crash before
    # its lineage recorded it: HEAD still lists it active
    job = launch(restore(), request_id="req-1", deps=deps).job
    dead = "the local job process (pid 7) was killed by signal 9 (SIGKILL) before reporting"
    update_job(
        deps.jobs,
        job,
        clock,
        lambda current, now: advance_job(current, JobState.FAILED, now, reason=dead),
    )
    assert job.job_id in ledger.get_head(ORDERS_3).active_jobs
    # When the run's SUCCESS arrives late
    result = state(deps, ledger, clock, job.run_id, job.job_id, "SUCCESS")
    # Then the job stays FAILED, and its lineage records the FAILED end, with its reason
    assert not result.recorded and deps.jobs.get(job.job_id).state is JobState.FAILED
    [failed] = [e for e in ledger.list_events(ORDERS_3, limit=1000).items if e.type == "JobFailed"]
    assert failed.reason == dead
    assert "JobSucceeded" not in events(ledger) and pins(ledger, latest) == []


def test_failure_reason_is_recorded(deps, ledger, clock, latest):
    job = launch(restore(), request_id="req-1", deps=deps).job
    state(
        deps,
        ledger,
        clock,
        job.run_id,
        job.job_id,
        "FAILED",
        "Job failed, ExitCode: 1. Error: boom",
    )
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.FAILED and "boom" in stored.failure_reason
    failed = [e for e in ledger.list_events(ORDERS_3, limit=1000).items if e.type == "JobFailed"]
    assert "boom" in failed[0].reason


def test_unknown_future_state_is_recorded_once_and_not_acted_on(deps, ledger, clock, latest):
    job = launch(restore(), request_id="req-1", deps=deps).job
    assert state(deps, ledger, clock, job.run_id, job.job_id, "HIBERNATING").recorded
    assert not state(deps, ledger, clock, job.run_id, job.job_id, "HIBERNATING").recorded
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.SUBMITTED
    assert [t.state for t in stored.transitions][-1] == "HIBERNATING"
    assert pins(ledger, latest) == [job.job_id]


def test_a_run_that_is_not_ours_is_ignored(deps, ledger, clock):
    result = state(deps, ledger, clock, "00fremdrun", None, "SUCCESS")
    assert not result.recorded and "not a snapledger job" in result.note


def test_an_opaque_base_is_refused_at_launch_naming_it_and_what_to_do(
    deps, ledger, store, clock, latest, runner
):
    from snapledger.errors import InvalidRequestError

    key = write_snapshot(store, lsn=199, files={"CURRENT": b"MANIFEST-000001\n"}, format="opaque")
    opaque = register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)
    with pytest.raises(InvalidRequestError, match=r"\(LSN 199\) is opaque: the jobs read only"):
        launch(restore(), request_id="req-opaque", deps=deps)
    assert opaque.snapshot_id is not None and not runner.started
    # an older kv-parquet snapshot of the same lineage still restores
    older = launch(restore(**{"from": {"lsn": 150}}), request_id="req-kv", deps=deps)
    assert older.job.partitions[0].base_snapshot_id == latest.snapshot_id


class SizingRunner(FakeRunner):
    """A runner that sizes every job alike (as EMR's does from the input)."""

    RESOURCES = JobResources(
        driver=WorkerSize(vcpu=1, memory_gb=4, disk_gb=20),
        executor=WorkerSize(vcpu=4, memory_gb=16, disk_gb=40),
        executors=3,
        shuffle_partitions=12,
    )

    SIZE = JobSize(
        driver=Worker(vcpu=1, memory_gb=4, disk_gb=20),
        executor=Worker(vcpu=4, memory_gb=16, disk_gb=40),
        executors=3,
        shuffle_partitions=12,
    )

    sizings = 0

    def size(self, spec):
        self.sized = spec
        self.sizings += 1
        return self.SIZE


def test_the_job_records_the_resources_its_run_was_started_with(deps, latest):
    sizing = SizingRunner()
    sized = LaunchDeps(**{**deps.__dict__, "runner": sizing})
    job = launch(restore(), request_id="req-sized", deps=sized).job
    assert job.state is JobState.SUBMITTED
    started = sizing.started[job.job_id]
    # sized once, from the spec it started, which carries that size to the runner
    assert (sizing.sizings, started.size) == (1, SizingRunner.SIZE)
    assert replace(started, size=None) == sizing.sized
    stored = deps.jobs.get(job.job_id)
    assert stored.resources == SizingRunner.RESOURCES  # through DynamoDB and back
    again = launch(restore(), request_id="req-sized", deps=sized).job
    assert again.resources == SizingRunner.RESOURCES and again.version == stored.version


def test_a_job_run_on_defaults_records_no_resources(deps, latest):
    job = launch(restore(), request_id="req-defaults", deps=deps).job
    assert job.run_id is not None and deps.jobs.get(job.job_id).resources is None


class EagerRunner(SizingRunner):
    """A runner whose RUNNING event arrives before the launch has recorded SUBMITTED."""

    def __init__(self, deps: LaunchDeps) -> None:
        super().__init__()
        self.deps = deps

    def start(self, spec):
        run_id = super().start(spec)
        record_job_state(
            run_id=run_id,
            job_name=spec.job_id,
            state="RUNNING",
            reason=None,
            jobs=self.deps.jobs,
            ledger=self.deps.ledger,
            clock=self.deps.clock,
        )
        return run_id


def test_a_state_reported_before_the_launch_records_submitted_is_kept(deps, ledger, latest):
    eager = LaunchDeps(**{**deps.__dict__, "runner": EagerRunner(deps)})
    job = launch(restore(), request_id="req-eager", deps=eager).job
    # The job stays RUNNING (SUBMITTED is stale now) and still records its run's size.
    stored = deps.jobs.get(job.job_id)
    assert stored.state is JobState.RUNNING and job.state is JobState.RUNNING
    assert stored.resources == SizingRunner.RESOURCES
    assert [t.state for t in stored.transitions] == ["REQUESTED", "RUNNING"]


def compaction():
    return LaunchRequest.model_validate(
        {"action": "compaction", "stream": "orders", "partition": 3}
    )


def test_a_second_compaction_of_a_lineage_is_refused_while_one_runs(deps, ledger, latest, runner):
    auto = launch(compaction(), request_id="auto-compaction", deps=deps).job
    assert ledger.get_head(ORDERS_3).compaction_job_id == auto.job_id
    # A console compaction beside it is refused, and HEAD still names the running one.
    with pytest.raises(InvalidRequestError, match=f"already runs job {auto.job_id}"):
        launch(compaction(), request_id="console-compaction", deps=deps)
    assert ledger.get_head(ORDERS_3).compaction_job_id == auto.job_id
    assert list(runner.started) == [auto.job_id]
    # A restore is not exclusive: it runs beside the compaction.
    assert launch(restore(), request_id="req-beside", deps=deps).job.state is JobState.SUBMITTED
    # Once the compaction has ended, another may start.
    record_job_state(
        run_id=auto.run_id,
        job_name=auto.job_id,
        state="SUCCESS",
        reason=None,
        jobs=deps.jobs,
        ledger=ledger,
        clock=deps.clock,
    )
    again = launch(compaction(), request_id="console-compaction", deps=deps).job
    assert ledger.get_head(ORDERS_3).compaction_job_id == again.job_id != auto.job_id
