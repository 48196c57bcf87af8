"""The job kinds table: one row per kind, the names every layer uses, and what follows
from each row (its descriptor, its base rule at launch and in the job's arguments)."""

from __future__ import annotations

from typing import get_args

import pytest

from jobs.args import JobArgs, JobKind
from jobs.errors import JobArgumentError
from snapledger.job_kinds import JOB_KINDS, RESTORE_DESCRIPTOR_NAME, Base, job_kind
from snapledger.layout import MANIFEST_NAME
from snapledger.models.jobs import JobKind as ModelJobKind
from snapledger.models.requests import LaunchRequest


def test_every_layer_names_the_same_kinds() -> None:
    assert set(JOB_KINDS) == {k.value for k in ModelJobKind} == set(get_args(JobKind))


def test_a_kind_writes_a_manifest_or_a_restore_descriptor() -> None:
    assert {name: spec.descriptor_name for name, spec in JOB_KINDS.items()} == {
        "bootstrap": MANIFEST_NAME,
        "compaction": MANIFEST_NAME,
        "restore": RESTORE_DESCRIPTOR_NAME,
    }
    with pytest.raises(ValueError, match="not one of bootstrap, compaction, restore"):
        job_kind("replay")


@pytest.mark.parametrize("name", sorted(JOB_KINDS))
def test_only_a_kind_that_chooses_its_base_takes_from(name: str) -> None:
    payload = {"action": name, "stream": "s", "partition": 0, "from": {"lsn": 5}}
    if job_kind(name).chooses_base:
        assert LaunchRequest.model_validate(payload).action == name
    else:
        with pytest.raises(ValueError, match=f"a {name} .*: leave out 'from'"):
            LaunchRequest.model_validate(payload)


@pytest.mark.parametrize("name", sorted(JOB_KINDS))
def test_the_jobs_base_rule_follows_the_row(name: str) -> None:
    base = "snapshots/s/0/00000000000000000005-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/"
    with_base = JobArgs(kind=name, root="file:///r", stream="s", partitions=(0,), job_id="j",
                        bases={0: base})  # fmt: skip
    without = JobArgs(kind=name, root="file:///r", stream="s", partitions=(0,), job_id="j")
    rule = job_kind(name).base
    for args, allowed in (
        (with_base, rule is not Base.NONE),
        (without, rule is not Base.REQUIRED),
    ):
        if allowed:
            args.validate()
        else:
            with pytest.raises(JobArgumentError):
                args.validate()
