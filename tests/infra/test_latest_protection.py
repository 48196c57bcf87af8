"""``-c protectLatest=true``: the bucket with Object Lock, the setting, the grants, the doc.

Off by default: the default synthesis has none of it. On: the bucket is created with
Object Lock and no default retention, register and gc get the setting and exactly the
grants docs/deploy.md lists, and nothing else changes (the Deny of version deletes, the
noncurrent-version rule that frees what GC released).
"""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import App

from infra import names
from infra.config import StackConfig
from infra.constructs.guardrails import DENY_SID
from snapledger.settings import ENV_PROTECT_LATEST
from tests.deployed.deployment import role_statements
from tests.infra.conftest import Synthesized, synthesize_app
from tests.infra.test_deploy_doc import DEPLOY_DOC, _section

PROTECTED = ((names.CTX_PROTECT_LATEST, "true"),)


def _bucket(synth: Synthesized) -> dict[str, Any]:
    properties: dict[str, Any] = synth.template_json["Resources"][
        synth.logical_id(synth.stack.storage.bucket)
    ]["Properties"]
    return properties


def _grants(synth: Synthesized, name: str) -> set[tuple[str, str]]:
    """(action, resource as synthesized, joined) of the function role's Allow statements."""
    role = synth.stack.functions.functions[name].role
    found = set()
    for statement in role_statements(synth, synth.logical_id(role)):
        if statement["Effect"] != "Allow":
            continue
        actions = statement["Action"]
        resources = statement["Resource"]
        for action in actions if isinstance(actions, list) else [actions]:
            for resource in resources if isinstance(resources, list) else [resources]:
                found.add((action, _text(resource)))
    return found


def _text(value: Any) -> str:
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(_text(part) for part in value["Fn::Join"][1])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "{bucket}" if value["Fn::GetAtt"][1] == "Arn" else str(value)
    return str(value)


def _environment(synth: Synthesized, name: str) -> dict[str, Any]:
    function = synth.template_json["Resources"][
        synth.logical_id(synth.stack.functions.functions[name])
    ]
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def test_off_by_default_no_object_lock_no_setting_no_grant(synth: Synthesized) -> None:
    assert StackConfig.from_context(App().node).protect_latest is False
    assert "ObjectLockEnabled" not in _bucket(synth)
    for name in synth.stack.functions.functions:
        assert ENV_PROTECT_LATEST not in _environment(synth, name)
        actions = {action for action, _ in _grants(synth, name)}
        assert not actions & {"s3:PutObjectLegalHold", "s3:ListBucketVersions"}, name


def test_on_the_bucket_has_object_lock_and_no_default_retention() -> None:
    bucket = _bucket(synthesize_app(PROTECTED))
    assert bucket["ObjectLockEnabled"] is True
    assert "ObjectLockConfiguration" not in bucket  # legal holds only, no retention rule
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    # what frees a version GC released: the noncurrent-version rule is still there
    rules = bucket["LifecycleConfiguration"]["Rules"]
    assert any("NoncurrentVersionExpiration" in rule for rule in rules)


def test_on_register_and_gc_get_the_setting_and_only_the_documented_grants(
    synth: Synthesized,
) -> None:
    protected = synthesize_app(PROTECTED)
    added = {}
    for name in synth.stack.functions.functions:
        environment = _environment(protected, name)
        if name in ("register", "gc"):
            assert environment[ENV_PROTECT_LATEST] == "true"
        else:
            assert ENV_PROTECT_LATEST not in environment, name
        new = _grants(protected, name) - _grants(synth, name)
        if new:
            added[name] = {(action, resource.split("/", 1)[-1]) for action, resource in new}
    assert added == {
        "register": {("s3:PutObjectLegalHold", "snapshots/*")},
        "gc": {("s3:PutObjectLegalHold", "snapshots/*"), ("s3:ListBucketVersions", "{bucket}")},
    }
    # the doc lists the same, role by role
    section = _section("The latest protected in the bucket")
    permissions = section[section.index("**Permissions it adds**") :]
    documented = {
        role: set(re.findall(r"`(s3:[A-Za-z]+)`", text))
        for role, text in re.findall(
            r"`(register|gc)`: (.+?)(?=`(?:register|gc)`:|Both)", permissions, re.S
        )
    }
    assert documented == {name: {action for action, _ in grants} for name, grants in added.items()}


def test_on_every_role_still_may_not_delete_a_version() -> None:
    protected = synthesize_app(PROTECTED)
    for role in protected.stack.own_roles():
        statements = role_statements(protected, protected.logical_id(role))
        deny = [s for s in statements if s.get("Sid") == DENY_SID]
        assert deny and "s3:DeleteObjectVersion" in deny[0]["Action"]


def test_the_context_key_is_documented_and_parsed() -> None:
    parameters = DEPLOY_DOC.read_text(encoding="utf-8")
    assert f"| `{names.CTX_PROTECT_LATEST}` | `false` |" in parameters
    on = App(context={names.CTX_PROTECT_LATEST: "true"})
    assert StackConfig.from_context(on.node).protect_latest is True
