"""A job's kind and state are typed in every command, event, record and port: ``JobKind``
(job_kinds.py) and ``JobState`` (models/jobs.py). The stored and wire values stay the
same strings; a value this version lacks (a newer runner's state, another release's kind)
is read and written back verbatim as an unknown member, never acted on."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import get_type_hints

import pytest
from pydantic import ValidationError

from snapledger.core.job_sizing import JobSize, PartitionInput
from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.job_kinds import JobKind
from snapledger.models.commands import RecordJobState, RequestJob
from snapledger.models.events import EVENT_ADAPTER, JobStateChanged
from snapledger.models.jobs import JobState, PartitionPlan, is_known
from snapledger.ports import jobs as job_ports
from tests.unit.model_scan import declared_models

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _job_fields() -> list[tuple[str, str, type]]:
    """Every field of a model that names a job's kind or state, and the type it must have."""
    fields = []
    for model in declared_models():
        for name in model.model_fields:
            if name == "job_kind" or (model.__name__ == "ActiveJob" and name == "kind"):
                fields.append((model.__name__, name, JobKind))
            is_job = "Job" in model.__name__
            if name == "state" and is_job:
                fields.append((model.__name__, name, JobState))
    return fields


JOB_FIELDS = _job_fields()


def test_the_scan_finds_every_model_that_names_a_kind_or_a_state() -> None:
    named = {f"{model}.{name}" for model, name, _ in JOB_FIELDS}
    assert named >= {
        "RequestJob.job_kind",
        "RecordJobState.state",
        "JobRequested.job_kind",
        "JobStateChanged.state",
        "JobFailed.state",
        "ActiveJob.kind",
        "ActiveJob.state",
        "JobTransition.state",
        "JobRecord.job_kind",
        "JobRecord.state",
    }


@pytest.mark.parametrize(("model", "name", "kind"), JOB_FIELDS, ids=str)
def test_each_models_job_kind_and_state_is_the_enum(model: str, name: str, kind: type) -> None:
    found = {m.__name__: m for m in declared_models()}[model]
    assert found.model_fields[name].annotation is kind


@pytest.mark.parametrize(
    ("port", "name", "kind"),
    [
        (job_ports.JobRunSpec, "kind", JobKind),
        (job_ports.JobRunStatus, "state", JobState),
        (job_ports.FoundJobRun, "state", JobState),
    ],
)
def test_each_ports_job_kind_and_state_is_the_enum(port: type, name: str, kind: type) -> None:
    assert dataclasses.is_dataclass(port)
    # (the ports name the models only for type checking: resolve them as mypy does)
    names = {"JobKind": JobKind, "JobState": JobState, "PartitionPlan": PartitionPlan}
    names |= {"JobSize": JobSize, "PartitionInput": PartitionInput}
    assert get_type_hints(port, localns=names)[name] is kind


def test_a_state_this_version_lacks_is_kept_verbatim_and_not_acted_on() -> None:
    # Given a stored JobStateChanged naming a state this version does not know
    stored = JobStateChanged(
        seq=2, at=T0, stream="orders", partition=3, command_id="c", job_id="j", state="WARMING"
    ).model_dump(mode="json")
    # When it is read back
    event = EVENT_ADAPTER.validate_python(stored)
    # Then it is a JobState that is not known, has no rank, and writes back unchanged
    assert isinstance(event, JobStateChanged) and isinstance(event.state, JobState)
    assert not is_known(event.state) and event.state.rank is None
    assert event.model_dump(mode="json") == stored
    # And a lineage records it without moving the job's rank
    state = LineageState.empty("orders", 3)
    request = RequestJob(
        stream="orders", partition=3, job_id="j", job_kind=JobKind.RESTORE, target_lsn=5
    )
    state = evolve_all(state, decide(state, request, T0))
    warming = RecordJobState(stream="orders", partition=3, job_id="j", state="WARMING")
    state = evolve_all(state, decide(state, warming, T0))
    assert state.head.active_jobs["j"].state == "WARMING"
    running = RecordJobState(stream="orders", partition=3, job_id="j", state="RUNNING")
    assert decide(state, running, T0)  # an unknown state is never compared: RUNNING moves


def test_a_command_refuses_a_kind_this_version_lacks() -> None:
    with pytest.raises(ValidationError, match="job_kind"):
        RequestJob(stream="orders", partition=3, job_id="j", job_kind="vacuum", target_lsn=5)


def test_the_wire_values_are_the_same_strings() -> None:
    request = RequestJob(
        stream="orders", partition=3, job_id="j", job_kind="compaction", target_lsn=5
    )
    assert request.job_kind is JobKind.COMPACTION
    assert request.model_dump(mode="json")["job_kind"] == "compaction"
    recorded = RecordJobState(stream="o", partition=0, job_id="j", state="SUCCESS")
    assert recorded.state is JobState.SUCCESS and recorded.command_id == "job-state:j:SUCCESS"


def test_a_known_state_reported_in_another_case_is_the_member() -> None:
    # EMR Serverless spells its states in capitals; a report in another case was always
    # acted on as that state, and is recorded as the member now
    recorded = RecordJobState(stream="o", partition=0, job_id="j", state="running")
    assert recorded.state is JobState.RUNNING
