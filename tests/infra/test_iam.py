"""Least privilege, checked on the synthesized policies and on the construct tree."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from aws_cdk import Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from infra import names
from infra.constants import FUNCTION_NAMES
from infra.constructs.guardrails import DENY_SID
from infra.nag import iam5
from tests.infra.conftest import Synthesized

MIN_REASON_LENGTH = 40


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements_of_role(synth: Synthesized, role: IConstruct) -> list[dict[str, Any]]:
    """Every statement of the inline policies attached to ``role`` in the template."""
    ref = {"Ref": synth.logical_id(role)}
    statements: list[dict[str, Any]] = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        if ref in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    role_props = synth.template_json["Resources"][synth.logical_id(role)]["Properties"]
    for inline in role_props.get("Policies", []):
        statements.extend(inline["PolicyDocument"]["Statement"])
    return statements


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    """The actions the statements allow (explicit denies are checked on their own)."""
    return {
        action
        for s in statements
        if s.get("Effect", "Allow") == "Allow"
        for action in _as_list(s["Action"])
    }


def _function_role(synth: Synthesized, name: str) -> iam.IRole:
    role = synth.stack.functions.functions[name].role
    assert role is not None
    return role


def _acknowledged(construct: IConstruct) -> dict[str, str]:
    """Rule id -> reason, for every acknowledgment on ``construct`` or its ancestors."""
    found: dict[str, str] = {}
    current: IConstruct | None = construct
    while current is not None:
        for entry in current.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for key, reason in entry.data.items():
                    found.setdefault(key.split("::", 1)[-1], reason)
        current = current.node.scope
    return found


def _policies(synth: Synthesized) -> Iterator[tuple[IConstruct, list[dict[str, Any]]]]:
    for construct in synth.stack.node.find_all():
        if isinstance(construct, iam.CfnPolicy):
            document = synth.stack.resolve(construct.policy_document)
            yield construct, document["Statement"]


def test_no_action_is_a_wildcard(synth: Synthesized) -> None:
    for policy, statements in _policies(synth):
        for action in _actions(statements):
            assert action != "*", policy.node.path
            assert not action.endswith(":*"), f"{policy.node.path}: {action}"


def test_resource_star_only_with_a_written_reason(synth: Synthesized) -> None:
    # Given every policy statement allowing a '*' resource
    for policy, statements in _policies(synth):
        star = [s for s in statements if "*" in _as_list(s.get("Resource", []))]
        if not star:
            continue
        # Then the policy (or its role) acknowledges it, with a reason that says why
        reason = _acknowledged(policy).get(iam5("Resource::*"), "")
        assert len(reason) >= MIN_REASON_LENGTH, f"{policy.node.path}: {_actions(star)}"


def test_every_acknowledgment_carries_a_reason(synth: Synthesized) -> None:
    acknowledged = 0
    for construct in synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    acknowledged += 1
                    assert len(reason.strip()) >= MIN_REASON_LENGTH, (construct.node.path, rule)
    assert acknowledged > 0


def test_register_cannot_delete_objects(synth: Synthesized) -> None:
    actions = _actions(_statements_of_role(synth, _function_role(synth, "register")))
    assert not any(a.startswith("s3:Delete") for a in actions)
    assert {"s3:GetObject", "s3:ListBucket"} <= actions
    assert "dynamodb:PutItem" in actions


def test_only_gc_may_delete_objects(synth: Synthesized) -> None:
    deleters = {
        name
        for name in FUNCTION_NAMES
        if any(
            a.startswith("s3:Delete")
            for a in _actions(_statements_of_role(synth, _function_role(synth, name)))
        )
    }
    assert deleters == {"gc"}


def test_gc_deletes_exactly_objects_under_snapshots_and_changelog(synth: Synthesized) -> None:
    # (tests/deployed executes both deletes under this role: expiry and the trim point)
    bucket_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.storage.bucket), "Arn"]}
    deletes = [
        s
        for s in _statements_of_role(synth, _function_role(synth, "gc"))
        if s["Effect"] == "Allow" and any(a.startswith("s3:Delete") for a in _as_list(s["Action"]))
    ]
    assert [_as_list(s["Action"]) for s in deletes] == [["s3:DeleteObject"]]
    resources = sorted(json.dumps(r, sort_keys=True) for r in _as_list(deletes[0]["Resource"]))
    assert resources == sorted(
        json.dumps({"Fn::Join": ["", [bucket_arn, suffix]]}, sort_keys=True)
        for suffix in ("/snapshots/*", "/changelog/*")
    )


def test_no_role_allows_an_action_group(synth: Synthesized) -> None:
    # Given every snapledger role: actions are spelled out, never CDK's grant_* groups
    for role in synth.stack.own_roles():
        for action in _actions(_statements_of_role(synth, role)):
            assert "*" not in action, f"{role.node.path}: {action}"


def test_every_snapledger_role_is_denied_rewriting_the_buckets_history(
    synth: Synthesized,
) -> None:
    bucket_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.storage.bucket), "Arn"]}
    for role in synth.stack.own_roles():
        denies = [
            s
            for s in _statements_of_role(synth, role)
            if s["Effect"] == "Deny" and s.get("Sid") == DENY_SID
        ]
        assert len(denies) == 1, role.node.path
        assert set(_as_list(denies[0]["Action"])) == {
            "s3:DeleteObjectVersion",
            "s3:PutBucketVersioning",
            "s3:PutLifecycleConfiguration",
        }
        assert _as_list(denies[0]["Resource"]) == [
            bucket_arn,
            {"Fn::Join": ["", [bucket_arn, "/*"]]},
        ]
    names_of_roles = {r.node.path for r in synth.stack.own_roles()}
    # the functions, the ledger-events enrichment, the job, the Pipe
    assert len(names_of_roles) == len(FUNCTION_NAMES) + 3


def test_query_is_read_only(synth: Synthesized) -> None:
    actions = _actions(_statements_of_role(synth, _function_role(synth, "query")))
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    assert not actions & writes
    assert not any(
        a.startswith(("s3:Put", "s3:Delete", "emr-serverless:", "iam:")) for a in actions
    )


def test_only_job_starters_start_jobs_and_pass_the_job_role_and_readers_only_read(
    synth: Synthesized,
) -> None:
    app_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.spark.application), "Arn"]}
    job_role_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.spark.job_role), "Arn"]}
    for name in FUNCTION_NAMES:
        statements = _statements_of_role(synth, _function_role(synth, name))
        emr = [s for s in statements if any("emr-serverless:" in a for a in _as_list(s["Action"]))]
        passes = [s for s in statements if "iam:PassRole" in _as_list(s["Action"])]
        if name not in names.JOB_FUNCTIONS:
            assert not emr and not passes, name
            continue
        job_runs = json.dumps({"Fn::Join": ["", [app_arn, "/jobruns/*"]]}, sort_keys=True)
        resources = {json.dumps(r, sort_keys=True) for s in emr for r in _as_list(s["Resource"])}
        if name in names.JOB_READING_FUNCTIONS:
            # gc also lists the application's runs: its stuck-job sweeper adopts the run of a
            # launch that stopped before recording it (issue 27 row 5).
            lists = {json.dumps(app_arn, sort_keys=True)} if name == "gc" else set()
            listing = {"emr-serverless:ListJobRuns"} if name == "gc" else set()
            assert resources == {job_runs} | lists, name
            assert _actions(emr) == {"emr-serverless:GetJobRun"} | listing, name
            assert not passes, name
            continue
        assert resources == {json.dumps(app_arn, sort_keys=True), job_runs}, name
        assert _actions(emr) == {"emr-serverless:StartJobRun", "emr-serverless:TagResource"}
        (pass_role,) = passes
        assert pass_role["Resource"] == job_role_arn
        assert pass_role["Condition"] == {
            "StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}
        }


def test_job_role_is_limited_to_its_prefixes(synth: Synthesized) -> None:
    bucket_id = synth.logical_id(synth.stack.storage.bucket)
    allowed_suffixes = {
        "/changelog/*",
        "/snapshots/*",
        "/_staging/*",
        "/restores/*",
        "/emr-logs/*",
        "/snapshots/*_$folder$",
    }
    for statement in _statements_of_role(synth, synth.stack.spark.job_role):
        if statement["Effect"] == "Deny":
            continue  # the history guardrail, checked on its own
        for resource in _as_list(statement["Resource"]):
            if resource == {"Fn::GetAtt": [bucket_id, "Arn"]}:
                continue  # bucket-level actions (listing); object actions do not apply here
            joined = resource["Fn::Join"][1]
            if joined[0] == {"Fn::GetAtt": [bucket_id, "Arn"]}:
                assert joined[1] in allowed_suffixes, joined[1]
                if any(a.startswith("s3:Delete") for a in _as_list(statement["Action"])):
                    assert joined[1] in {"/_staging/*", "/restores/*", "/snapshots/*_$folder$"}
            else:
                # the two job code assets, by exact key
                assert joined[-1].endswith((".py", ".zip")), joined
                assert _as_list(statement["Action"]) == ["s3:GetObject"]
