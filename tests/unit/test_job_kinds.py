"""The job kinds table: one row per kind, the names every layer uses, and what follows
from each row (its descriptor, its base rule at launch and in the job's arguments, its
EventBridge detail-type, its per-partition targets, where the CLI says it wrote)."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from infra.constants import LAUNCH_DETAIL_TYPES
from jobs.args import JOB_KINDS as JOB_ARG_KINDS
from jobs.args import JobArgs, JobKind, build_parser
from jobs.errors import JobArgumentError
from snapledger import job_kinds
from snapledger.cli.waiting import output_locations
from snapledger.job_kinds import JOB_KINDS, RESTORE_DESCRIPTOR_NAME, Base, job_kind
from snapledger.layout import MANIFEST_NAME, SNAPSHOTS, restore_prefix
from snapledger.models.jobs import JobKind as ModelJobKind
from snapledger.models.manifest import ManifestSource
from snapledger.models.requests import DETAIL_TYPE_ACTIONS, LaunchRequest


def test_every_layer_names_the_same_kinds() -> None:
    # One declaration: the models and the job's arguments use the table's enum itself.
    assert JobKind is ModelJobKind is job_kinds.JobKind
    assert set(JOB_KINDS) == {k.value for k in ModelJobKind} == set(JOB_ARG_KINDS)
    assert set(DETAIL_TYPE_ACTIONS.values()) == set(JOB_KINDS)
    source_kinds = get_args(ManifestSource.model_fields["kind"].annotation)
    assert source_kinds == ("processor", *JOB_KINDS)


def test_the_wire_names_stay_as_they_were() -> None:
    # Orders included: the schemas, the CDK app's launch rule and --kind's choices.
    assert [k.value for k in JobKind] == ["bootstrap", "restore", "compaction"]
    assert LAUNCH_DETAIL_TYPES == (
        "BootstrapRequested",
        "RestoreRequested",
        "CompactionRequested",
        "SnapshotStreamRequested",
    )
    assert DETAIL_TYPE_ACTIONS == {
        "BootstrapRequested": "bootstrap",
        "RestoreRequested": "restore",
        "CompactionRequested": "compaction",
    }
    assert JOB_ARG_KINDS == ("bootstrap", "compaction", "restore")
    with pytest.raises(JobArgumentError, match="choose from 'bootstrap', 'compaction', 'restore'"):
        build_parser().parse_args(["--kind", "replay"])


def test_the_launch_rule_accepts_every_kinds_detail_type() -> None:
    # infra/constants.py derives the rule's detail-types from the table, nothing else.
    assert {spec.detail_type for spec in JOB_KINDS.values()} <= set(LAUNCH_DETAIL_TYPES)


@pytest.mark.parametrize("name", sorted(JOB_KINDS))
def test_only_a_kind_with_per_partition_targets_takes_target_lsns(name: str) -> None:
    payload = {"action": name, "stream": "s", "partitions": [0, 1], "target_lsns": {0: 5}}
    if job_kind(name).per_partition_targets:
        assert LaunchRequest.model_validate(payload).target_for(0) == 5
    else:
        with pytest.raises(ValidationError, match="takes a target LSN per partition"):
            LaunchRequest.model_validate(payload)


@pytest.mark.parametrize("name", sorted(JOB_KINDS))
def test_the_cli_says_where_each_kind_writes(name: str) -> None:
    job = {"job_id": "j", "job_kind": name, "stream": "s", "partitions": [{"partition": 2}]}
    expected = [f"{SNAPSHOTS}/s/2/"] if job_kind(name).writes_snapshot else [restore_prefix("j", 2)]
    assert output_locations(job) == expected


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
