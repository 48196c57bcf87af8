"""The job record's one transition (core.jobs.advance_job) and the lineage's refusal of a
second exclusive job (one_per_lineage, in the Decider itself)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from snapledger.core.jobs import advance_job
from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.errors import InvalidRequestError
from snapledger.job_kinds import JOB_KINDS, JobKind
from snapledger.models.commands import RecordJobState, RequestJob
from snapledger.models.jobs import (
    JobRecord,
    JobResources,
    JobState,
    JobTransition,
    WorkerSize,
    reported_state,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
WORKER = WorkerSize(vcpu=4, memory_gb=16, disk_gb=20)
RESOURCES = JobResources(driver=WORKER, executor=WORKER, executors=2, shuffle_partitions=8)


def requested() -> JobRecord:
    return JobRecord(
        job_id="j",
        request_id="r",
        job_kind=JobKind.COMPACTION,
        stream="orders",
        partitions=(),
        requested_at=T0,
        updated_at=T0,
        transitions=(JobTransition(state="REQUESTED", at=T0),),
    )


def test_a_state_of_a_higher_rank_moves_the_job_and_is_recorded() -> None:
    job = advance_job(requested(), JobState.SUBMITTED, T1, run_id="run-1", resources=RESOURCES)
    assert job is not None
    assert (job.state, job.run_id, job.resources, job.version) == (
        JobState.SUBMITTED,
        "run-1",
        RESOURCES,
        2,
    )
    assert job.transitions[-1] == JobTransition(state="SUBMITTED", at=T1)
    assert job.updated_at == T1


def test_a_stale_repeated_or_terminal_report_changes_nothing() -> None:
    running = advance_job(requested(), JobState.RUNNING, T1, run_id="run-1")
    assert running is not None
    assert advance_job(running, JobState.SUBMITTED, T1, run_id="run-1") is None  # lower rank
    assert advance_job(running, JobState.RUNNING, T1) is None  # repeated
    failed = advance_job(running, JobState.FAILED, T1, reason="boom")
    assert failed is not None and failed.failure_reason == "boom" and failed.terminal
    assert advance_job(failed, JobState.SUCCESS, T1) is None  # terminal


def test_a_state_this_version_does_not_know_is_recorded_not_acted_on() -> None:
    job = advance_job(requested(), reported_state("WARMING_UP"), T1)
    assert job is not None
    assert job.state is JobState.REQUESTED and job.transitions[-1].state == "WARMING_UP"
    assert advance_job(job, reported_state("WARMING_UP"), T1) is None


def test_a_stale_state_still_fills_in_the_run_and_its_size() -> None:
    # The runner's RUNNING arrived before the launch recorded SUBMITTED with the size.
    running = advance_job(requested(), JobState.RUNNING, T1, run_id="run-1")
    assert running is not None
    late = advance_job(running, JobState.SUBMITTED, T1, run_id="run-1", resources=RESOURCES)
    assert late is not None
    assert (late.state, late.resources, late.transitions) == (
        JobState.RUNNING,
        RESOURCES,
        running.transitions,
    )
    assert advance_job(late, JobState.SUBMITTED, T1, run_id="run-1", resources=RESOURCES) is None


def request(job_id: str, kind: str) -> RequestJob:
    return RequestJob(stream="orders", partition=3, job_id=job_id, job_kind=kind, target_lsn=10)


def run(state: LineageState, *commands: RequestJob | RecordJobState) -> LineageState:
    for command in commands:
        state = evolve_all(state, decide(state, command, T0))
    return state


EXCLUSIVE = [name for name, spec in JOB_KINDS.items() if spec.one_per_lineage]


@pytest.mark.parametrize("kind", EXCLUSIVE)
def test_the_lineage_refuses_a_second_exclusive_job_while_one_runs(kind: str) -> None:
    state = run(LineageState.empty("orders", 3), request("auto", kind))
    assert state.head.compaction_job_id == "auto"
    # A second one (say a console compaction beside the automatic one) is refused: it
    # would otherwise take HEAD's slot from the job still running.
    with pytest.raises(InvalidRequestError, match="already runs job auto"):
        decide(state, request("console", kind), T0)
    assert decide(state, request("auto", kind), T0) == []  # the same job: idempotent
    # Once the first has ended, another may start.
    ended = RecordJobState(stream="orders", partition=3, job_id="auto", state="SUCCESS")
    state = run(state, ended, request("console", kind))
    assert state.head.compaction_job_id == "console"


def test_a_job_that_is_not_exclusive_runs_beside_one_that_is() -> None:
    state = run(LineageState.empty("orders", 3), request("auto", EXCLUSIVE[0]))
    others = [name for name, spec in JOB_KINDS.items() if not spec.one_per_lineage]
    state = run(state, *(request(f"other-{name}", name) for name in others))
    assert state.head.compaction_job_id == "auto"
    assert set(state.head.active_jobs) == {"auto", *(f"other-{name}" for name in others)}
