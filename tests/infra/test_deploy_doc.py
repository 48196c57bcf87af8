"""docs/deploy.md tells the truth about the synthesized stack: its permissions table and
what a failed first deploy leaves behind."""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import aws_iam as iam

from infra import names
from tests.deployed.deployment import USED_BY_THE_PLATFORM, role_statements
from tests.infra.conftest import Synthesized, synthesize_app

DEPLOY_DOC = names.REPO_ROOT / "docs" / "deploy.md"
#: The CDK CLI's version, pinned once: CI runs it, every command in the docs names it.
CDK_CLI_VERSION = names.REPO_ROOT / "tools" / "cdk-cli-version"
# Called with the role by Lambda and the X-Ray daemon; the doc lists them once, in prose.
PLATFORM_ACTIONS = {
    action for action in USED_BY_THE_PLATFORM if action.startswith(("logs:", "xray:"))
}


def _section(title: str) -> str:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _allowed(synth: Synthesized, role: iam.IRole) -> set[str]:
    actions: set[str] = set()
    for statement in role_statements(synth, synth.logical_id(role)):
        if statement["Effect"] == "Allow":
            value: Any = statement["Action"]
            actions |= set(value if isinstance(value, list) else [value])
    return actions


def _documented_roles() -> dict[str, set[str]]:
    rows = re.findall(r"^\| ([^|`]+?) \| ([^|]+) \|$", _section("Permissions"), re.MULTILINE)
    return {
        role.strip(): set(re.findall(r"`([a-z0-9-]+:[A-Za-z]+)`", actions))
        for role, actions in rows
        if role.strip() != "role"
    }


def test_the_permissions_table_lists_each_roles_allowed_actions(synth: Synthesized) -> None:
    stack = synth.stack
    roles: dict[str, iam.IRole] = {
        name: function.role
        for name, function in stack.functions.functions.items()
        if function.role is not None
    }
    assert stack.enrichment.role is not None
    roles["ledger_events (the Pipe's enrichment)"] = stack.enrichment.role
    roles["Spark job"] = stack.spark.job_role
    roles["events Pipe"] = stack.events.pipe_role
    documented = _documented_roles()
    assert set(documented) == set(roles)
    for name, role in roles.items():
        actions = _allowed(synth, role) - PLATFORM_ACTIONS
        if name in names.ASYNC_FUNCTIONS and "sqs:SendMessage" not in documented[name]:
            # its failure queue, in the doc's prose (register's row names its queue too)
            actions.discard("sqs:SendMessage")
        assert documented[name] == actions, name


def test_a_failed_first_deploy_keeps_only_the_table_and_the_buckets(synth: Synthesized) -> None:
    # Given the default configuration (deletion protection on)
    retained = {
        logical_id: resource
        for logical_id, resource in synth.template_json["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    # Then what a rollback keeps is the ledger table and the two buckets, as the doc says,
    # under generated names that start as it shows
    assert {r["Type"] for r in retained.values()} == {"AWS::DynamoDB::Table", "AWS::S3::Bucket"}
    assert len(retained) == 3
    for logical_id, resource in retained.items():
        assert "TableName" not in resource["Properties"]
        assert "BucketName" not in resource["Properties"]
        assert logical_id.startswith(("Ledger", "StorageSnapshots", "StorageAccessLogs"))
    table = synth.template_json["Resources"][synth.logical_id(synth.stack.ledger.table)]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    section = _section("If the first deploy fails")
    for shown in (
        "Snapledger-Ledger",
        "snapledger-storagesnapshots",
        "snapledger-storageaccesslogs",
    ):
        assert shown in section


def test_the_node_versions_are_the_readmes_and_make_and_ci_silence_jsii_for_the_found_one() -> None:
    prerequisites = " ".join(_section("Prerequisites").split())
    readme = " ".join((names.REPO_ROOT / "README.md").read_text(encoding="utf-8").split())
    for text in (prerequisites, readme):
        assert "Node.js 22 or 24" in text
        assert "20 still works" in text
    pinned = CDK_CLI_VERSION.read_text(encoding="utf-8").strip()
    silenced = f"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 npx aws-cdk@{pinned} synth"
    assert silenced in prerequisites
    for runner in ("Makefile", ".ci/run"):
        text = (names.REPO_ROOT / runner).read_text(encoding="utf-8")
        line = next(
            x for x in text.splitlines() if "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION" in x
        )
        assert "process.versions.node.split" in line, runner


def _node_policy_rows() -> set[tuple[str, str]]:
    """(action, where) of each row of the Restate section's managed-policy table."""
    rows = re.findall(r"^  \| (`s3:[^|]+) \| ([^|]+) \|$", _section("Restate clusters"), re.M)
    return {
        (action, where.strip().split(" ")[0].strip("`,"))
        for actions, where in rows
        for action in re.findall(r"`(s3:[A-Za-z]+)`", actions)
    }


def test_the_restate_section_tells_the_synthesized_node_policy_and_grants() -> None:
    from tests.infra.test_restate_deploy import NORMALIZED, RESTATE_CONTEXT

    restate_synth = synthesize_app(RESTATE_CONTEXT)
    prefix, stream = next(iter(NORMALIZED.items()))
    output = restate_synth.template_json["Outputs"][names.restate_output_key(stream)]
    policy = restate_synth.template_json["Resources"][output["Value"]["Ref"]]
    synthesized = set()
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        resource = statement["Resource"]
        where = (
            "".join(p for p in resource["Fn::Join"][1] if isinstance(p, str)).lstrip("/")
            if "Fn::Join" in resource
            else "the"  # the bucket (ListBucket)
        )
        actions = statement["Action"]
        for action in actions if isinstance(actions, list) else [actions]:
            synthesized.add((action, where.replace(prefix, "{prefix}")))
    assert _node_policy_rows() == synthesized
    section = _section("Restate clusters")
    assert names.restate_output_key("payments") in section
    assert f"{names.OUTPUT_RESTATE_NODE_POLICY_PREFIX}{{Stream}}" in section
    for claim in (
        f"ending in `/{names.RESTATE_METADATA_SUFFIX}`",
        f"`s3:DeleteObject` on `{names.restate_snapshot_folders('{prefix}')}` only",
        f"`s3:PutObject` on `{names.restate_latest_pointers('{prefix}')}` only when",
        '`Null: {"s3:if-match": "false"}`',
        f"(`{names.restate_deeper_pointers('{prefix}')}`) is denied",
        "`register`, `gc` and `query`",
        "`SNAPLEDGER_LAYOUTS`",
    ):
        assert claim in section, claim


def test_the_cdk_cli_version_is_pinned_once_and_every_mention_names_it() -> None:
    pinned = CDK_CLI_VERSION.read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"2\.\d+\.\d+", pinned), pinned  # an exact release of CDK CLI v2
    mentions = {}
    for path in ("README.md", "docs/deploy.md", "tools/cdk-app", ".ci/run", "Makefile"):
        text = (names.REPO_ROOT / path).read_text(encoding="utf-8")
        mentions[path] = re.findall(r"aws-cdk@([^\s`'\")]+)", text)
    named = {path: set(found) - {pinned} for path, found in mentions.items()}
    assert named == {  # no other version (aws-cdk@2 floats), and the two runners read the file
        "README.md": set(),
        "docs/deploy.md": set(),
        "tools/cdk-app": {"VERSION"},
        ".ci/run": {"$(<"},
        "Makefile": set(),
    }
    assert mentions["docs/deploy.md"] and mentions["README.md"]
    ci = (names.REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'cdk="aws-cdk@$(< tools/cdk-cli-version)"' in ci
    assert 'npx --yes "$cdk" --version' in ci and 'npx --yes --offline "$cdk" synth' in ci
