"""``-c restatePrefixes`` (issue 28, "Deploy"), checked on the synthesized template.

The parameter is read and checked at synth by snapledger's own ``LayoutCatalog`` (a bad
value fails ``cdk synth`` with the catalog's message); each prefix's ``metadata.json`` (and
nothing else under it) reaches register; register, gc and query get
``SNAPLEDGER_RESTATE_PREFIXES``; register and gc get their grants under the prefixes; and
the stack outputs a managed policy per prefix for its Restate nodes. The same grants are
exercised under IAM enforcement in tests/deployed/test_restate_roles.py.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from cdk_nag import AwsSolutionsChecks
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from infra import names
from infra.app import build_app
from infra.config import StackConfig
from infra.constructs.function_grants import REGISTER_POINTER_DENY_SID
from infra.constructs.function_roles import IF_MATCH_ONLY, RESTATE_POINTER_WRITE_SID
from infra.constructs.functions import LAYOUT_FUNCTIONS
from infra.constructs.restate_nodes import LATEST_WRITE_CONDITIONS
from infra.nag import acknowledgments_withheld
from snapledger.layouts.layout_map import settings_layout_map
from snapledger.settings import ENV_LAYOUTS, LedgerSettings, settings_from_env
from snapledger.strategies.catalog import LayoutCatalog
from tests.infra.conftest import Synthesized, synthesize_app

# Two clusters, the second written with stray slashes (normalized at synth).
CLUSTERS = {"restate/prod-1": "payments", "/restate/prod-2/": "ledger"}
NORMALIZED = {"restate/prod-1": "payments", "restate/prod-2": "ledger"}
RESTATE_CONTEXT = ((names.CTX_RESTATE_PREFIXES, json.dumps(CLUSTERS)),)
LINT_REGIONS = ["us-east-1"]


@pytest.fixture(scope="module")
def restate_synth() -> Synthesized:
    return synthesize_app(RESTATE_CONTEXT)


def _config(value: object) -> StackConfig:
    return StackConfig.from_context(App(context={names.CTX_RESTATE_PREFIXES: value}).node)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _text(value: Any) -> str:
    """An ARN as the template spells it, with the bucket's Fn::GetAtt written ``<bucket>``."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join("<bucket>" if isinstance(p, dict) else p for p in value["Fn::Join"][1])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<bucket>"
    return str(value)


def _role_statements(synth: Synthesized, name: str) -> list[dict[str, Any]]:
    role = synth.stack.functions.functions[name].role
    assert role is not None
    ref = {"Ref": synth.logical_id(role)}
    return [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        if ref in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _grants(statements: list[dict[str, Any]], effect: str = "Allow") -> set[tuple[str, str, str]]:
    """(action, resource, condition JSON) of each statement of ``effect``."""
    return {
        (action, _text(resource), json.dumps(s.get("Condition", {}), sort_keys=True))
        for s in statements
        if s["Effect"] == effect
        for action in _as_list(s["Action"])
        for resource in _as_list(s["Resource"])
    }


# --- the parameter --------------------------------------------------------------------------


def test_the_parameter_is_read_normalized_from_a_string_or_an_object() -> None:
    assert _config(json.dumps(CLUSTERS)).restate_prefixes == NORMALIZED
    assert _config(CLUSTERS).restate_prefixes == NORMALIZED  # cdk.json gives an object
    assert StackConfig.from_context(App().node).restate_prefixes == {}
    assert _config("").restate_prefixes == {}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("restate/prod-1=payments", "must be a JSON object"),
        ('["restate/prod-1"]', "must be an object of Restate prefix to stream name"),
        ('{"restate/prod-1": 3}', "both strings"),
        ('{"restate/prod-1": "no spaces"}', "'no spaces'"),
        ('{"/": "payments"}', "is the bucket's root"),
        ('{"snapshots/restate": "payments"}', "inside snapshots/, which snapledger writes"),
        ('{"changelog": "payments"}', "inside changelog/"),
        ('{"restores/x": "payments"}', "inside restores/"),
        ('{"restate/a/../b": "payments"}', "'..' segments are not allowed"),
        ('{"restate//a": "payments"}', "empty path segments"),
        ('{"restate": "a", "restate/prod-1": "b"}', "overlap"),
        ('{"restate/prod-1": "a", "restate/prod-1/": "b"}', "once normalized"),
        ('{"restate/prod-1": "a", "restate/prod-2": "a"}', "is also entry"),
        ('{"restate/*": "payments"}', "which IAM reads as a wildcard"),
        ('{"restate/${aws:username}": "payments"}', "which IAM reads as a wildcard"),
        ('{"restate/a": "pay-ments", "restate/b": "pay_ments"}', "share the stack output"),
    ],
)
def test_a_bad_value_fails_naming_the_problem(value: str, problem: str) -> None:
    with pytest.raises(ValueError, match=names.CTX_RESTATE_PREFIXES) as refused:
        _config(value)
    assert problem in str(refused.value)


def test_protect_latest_is_refused_beside_restate_prefixes() -> None:
    context = {names.CTX_RESTATE_PREFIXES: CLUSTERS, names.CTX_PROTECT_LATEST: "true"}
    with pytest.raises(ValueError, match="cannot be combined yet"):
        StackConfig.from_context(App(context=context).node)


def test_the_check_is_the_catalogs_own() -> None:
    value = {"restate/prod-1": "a", "restate/prod-2": "a"}
    with pytest.raises(Exception) as catalog:
        LayoutCatalog.of(value)
    with pytest.raises(ValueError) as synth:
        _config(value)
    # the same message, naming where the value came from
    assert str(catalog.value).removeprefix("the layout map: ") in str(synth.value)


def test_a_bad_value_fails_the_synth_of_the_app(tmp_path: Path) -> None:
    # What `cdk synth -c restatePrefixes=...` runs: the app, given the context by the CLI
    context = {names.CTX_RESTATE_PREFIXES: '{"snapshots/x": "payments"}'}
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "infra.app"],
        capture_output=True,
        text=True,
        env=env,
        cwd=names.REPO_ROOT,
        check=False,
        timeout=300,
    )
    assert done.returncode != 0
    assert "inside snapshots/, which snapledger writes itself" in done.stderr
    assert not (tmp_path / "Snapledger.template.json").exists()


# --- notifications ----------------------------------------------------------------------------


def _notifications(synth: Synthesized) -> list[dict[str, Any]]:
    (resource,) = synth.resources("Custom::S3BucketNotifications").values()
    configurations = resource["Properties"]["NotificationConfiguration"]
    assert set(configurations) == {"LambdaFunctionConfigurations"}
    return configurations["LambdaFunctionConfigurations"]  # type: ignore[no-any-return]


def _invoked_by(synth: Synthesized, key: str) -> list[str]:
    """The functions an ObjectCreated of ``key`` invokes, by their notification filters."""
    by_id = {synth.logical_id(fn): name for name, fn in synth.stack.functions.functions.items()}
    invoked = []
    for configuration in _notifications(synth):
        rules = {r["Name"]: r["Value"] for r in configuration["Filter"]["Key"]["FilterRules"]}
        if key.startswith(rules.get("prefix", "")) and key.endswith(rules.get("suffix", "")):
            invoked.append(by_id[configuration["LambdaFunctionArn"]["Fn::GetAtt"][0]])
    return invoked


def test_each_prefixs_metadata_json_reaches_register(restate_synth: Synthesized) -> None:
    filters = [
        {r["Name"]: r["Value"] for r in c["Filter"]["Key"]["FilterRules"]}
        for c in _notifications(restate_synth)
        if c["Events"] == ["s3:ObjectCreated:*"]
    ]
    for prefix in NORMALIZED:
        assert {"prefix": f"{prefix}/", "suffix": "/metadata.json"} in filters
    assert len(filters) == 2 + len(NORMALIZED)  # manifests, segments, one per prefix


@pytest.mark.parametrize(
    ("key", "invoked"),
    [
        ("restate/prod-1/0/lsn_00000000000000001000-snap_1/metadata.json", ["register"]),
        ("restate/prod-2/12/lsn_00000000000000000007-snap_2/metadata.json", ["register"]),
        # an SST, latest.json, a stray: nothing under the prefix invokes anything else
        ("restate/prod-1/0/lsn_00000000000000001000-snap_1/000024.sst", []),
        ("restate/prod-1/0/latest.json", []),
        ("restate/prod-1/0/lsn_00000000000000001000-snap_1/xmetadata.json", []),
        # another cluster's, unconfigured: nothing
        ("restate/staging/0/lsn_00000000000000001000-snap_1/metadata.json", []),
        (
            "snapshots/orders/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/_manifest.json",
            ["register"],
        ),
    ],
)
def test_only_a_snapshots_metadata_json_invokes_anything(
    restate_synth: Synthesized, key: str, invoked: list[str]
) -> None:
    assert _invoked_by(restate_synth, key) == invoked


def test_without_the_parameter_nothing_restate_is_deployed(synth: Synthesized) -> None:
    assert len(_notifications(synth)) == 2
    assert not synth.resources("AWS::IAM::ManagedPolicy")
    assert not [k for k in synth.template_json["Outputs"] if k.startswith("RestateNode")]
    for name in LAYOUT_FUNCTIONS:
        function = synth.template_json["Resources"][
            synth.logical_id(synth.stack.functions.functions[name])
        ]
        assert ENV_LAYOUTS not in function["Properties"]["Environment"]["Variables"]
    assert "restate" not in json.dumps(_role_statements(synth, "gc"))


# --- the functions ----------------------------------------------------------------------------


def test_register_gc_and_query_read_the_prefixes_as_the_catalog_does(
    restate_synth: Synthesized,
) -> None:
    for name, function in restate_synth.stack.functions.functions.items():
        variables = restate_synth.template_json["Resources"][restate_synth.logical_id(function)][
            "Properties"
        ]["Environment"]["Variables"]
        if name not in LAYOUT_FUNCTIONS:
            assert ENV_LAYOUTS not in variables, name
            continue
        value = variables[ENV_LAYOUTS]
        assert json.loads(value) == {
            p: {"layout": "restate", "stream": s} for p, s in NORMALIZED.items()
        }
        # the functions' own settings read it into the same catalog
        environ = {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "s3://b"}
        settings = settings_from_env(LedgerSettings, {**environ, ENV_LAYOUTS: value})
        layouts = LayoutCatalog(settings_layout_map(settings)).restate_layouts
        assert {layout.prefix: layout.stream for layout in layouts} == NORMALIZED


def test_register_reads_and_lists_under_the_prefixes_and_writes_nothing_there(
    restate_synth: Synthesized,
) -> None:
    statements = _role_statements(restate_synth, "register")
    grants = {g for g in _grants(statements) if "restate/" in g[1] or "restate/" in g[2]}
    listing = next(s for s in statements if s.get("Sid") == "ListTheBucket")
    assert set(listing["Condition"]["StringLike"]["s3:prefix"]) >= {f"{p}/*" for p in NORMALIZED}
    assert {(a, r) for a, r, _ in grants} == {
        *(("s3:GetObject", f"<bucket>/{p}/*") for p in NORMALIZED),
        ("s3:ListBucket", "<bucket>"),
    }


def test_gc_deletes_snapshot_folders_only_and_rewrites_latest_json_only_with_if_match(
    restate_synth: Synthesized,
) -> None:
    statements = _role_statements(restate_synth, "gc")
    grants = {g for g in _grants(statements) if "/restate/" in g[1]}
    no_condition = json.dumps({})
    if_match = json.dumps(IF_MATCH_ONLY, sort_keys=True)
    assert grants == {
        grant
        for p in NORMALIZED
        for grant in (
            ("s3:GetObject", f"<bucket>/{p}/*", no_condition),
            ("s3:DeleteObject", f"<bucket>/{p}/*/lsn_*", no_condition),
            ("s3:PutObject", f"<bucket>/{p}/*/latest.json", if_match),
        )
    }
    (write,) = [s for s in statements if s.get("Sid") == RESTATE_POINTER_WRITE_SID]
    assert write["Condition"] == {"Null": {"s3:if-match": "false"}}
    # a latest.json deeper than a partition's own (inside a snapshot folder) is denied
    (deny,) = [s for s in statements if s.get("Sid") == REGISTER_POINTER_DENY_SID]
    denied = {_text(r) for r in _as_list(deny["Resource"])}
    assert {f"<bucket>/{p}/*/*/latest.json" for p in NORMALIZED} <= denied
    # the deletion grant cannot name a partition's latest.json
    for p in NORMALIZED:
        assert not fnmatch.fnmatchcase(f"{p}/0/latest.json", f"{p}/*/lsn_*")


def test_no_function_role_is_granted_a_wildcard_action(restate_synth: Synthesized) -> None:
    for name in restate_synth.stack.functions.functions:
        for statement in _role_statements(restate_synth, name):
            assert not any("*" in a for a in _as_list(statement["Action"])), (name, statement)


# --- the managed policy for the Restate nodes -------------------------------------------------


def test_the_stack_outputs_a_node_policy_per_prefix(restate_synth: Synthesized) -> None:
    outputs = restate_synth.template_json["Outputs"]
    policies = restate_synth.resources("AWS::IAM::ManagedPolicy")
    for prefix, stream in NORMALIZED.items():
        output = outputs[names.restate_output_key(stream)]
        policy = policies[output["Value"]["Ref"]]
        assert prefix in output["Description"]
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert _grants(statements) == {
            (
                "s3:ListBucket",
                "<bucket>",
                json.dumps({"StringLike": {"s3:prefix": [f"{prefix}/*"]}}),
            ),
            ("s3:GetObject", f"<bucket>/{prefix}/*", "{}"),
            *(
                (action, f"<bucket>/{prefix}/*/lsn_*", "{}")
                for action in ("s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject")
            ),
            *(
                ("s3:PutObject", f"<bucket>/{prefix}/*/latest.json", json.dumps(c))
                for c in LATEST_WRITE_CONDITIONS.values()
            ),
        }
        assert "Roles" not in policy["Properties"]  # the operator attaches it
    assert names.restate_output_key("pay.ments-eu_1") == "RestateNodePolicyPayMentsEu1"


# --- compliance of the synth with the parameter -----------------------------------------------


def test_the_synth_with_restate_prefixes_is_nag_and_lint_clean(restate_synth: Synthesized) -> None:
    report = json.loads(
        (restate_synth.outdir / "validation-report.json").read_text(encoding="utf-8")
    )
    assert report["pluginReports"] == []
    violations = AwsSolutionsChecks(verbose=True).validate_scope(restate_synth.app).violations
    assert [v.rule_name for v in violations] == []
    matches = lint(
        json.dumps(restate_synth.template_json),
        regions=LINT_REGIONS,
        config=ManualArgs(regions=LINT_REGIONS),
    )
    assert [m.rule.id for m in matches if m.rule.id.startswith("E")] == []


def test_every_restate_acknowledgment_answers_a_finding(tmp_path: Path) -> None:
    with acknowledgments_withheld() as acknowledged:
        app, _ = build_app(context=dict(RESTATE_CONTEXT), outdir=str(tmp_path))
    report = AwsSolutionsChecks(verbose=True).validate_scope(app)
    findings = {
        (resource.construct_path or "", violation.rule_name)
        for violation in report.violations
        for resource in violation.violating_resources
    }
    restate = [(p, r) for p, r in acknowledged if "restate" in r.lower() or "Restate" in p]
    assert restate
    stale = [
        (path, rule)
        for path, rule in restate
        if not any(
            found_rule == rule and (found_path == path or found_path.startswith(f"{path}/"))
            for found_path, found_rule in findings
        )
    ]
    assert stale == []
