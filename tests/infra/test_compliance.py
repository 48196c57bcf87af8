"""cdk-nag AwsSolutions and cfn-lint on the synthesized template: no unacknowledged findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from infra.app import build_app
from infra.nag import acknowledgments_withheld
from tests.infra.conftest import Synthesized, synthesize_app
from tests.infra.test_fluss_reach import FLUSS_CONTEXT

LINT_REGIONS = ["us-east-1", "eu-west-1"]


def _nag_violations(synth: Synthesized, severity: str) -> list[str]:
    # cdk-nag 3 reports through CDK's policy validation, not annotations: ask the pack directly.
    report = AwsSolutionsChecks(verbose=True).validate_scope(synth.app)
    return [
        f"{v.rule_name} at {[r.construct_path for r in v.violating_resources]}: {v.description}"
        for v in report.violations
        if v.severity == severity
    ]


def test_cdk_nag_reports_no_unacknowledged_errors(synth: Synthesized) -> None:
    assert _nag_violations(synth, "error") == []


def test_cdk_nag_reports_no_unacknowledged_warnings(synth: Synthesized) -> None:
    assert _nag_violations(synth, "warning") == []


def test_synth_left_no_error_annotations(synth: Synthesized) -> None:
    errors = Annotations.from_stack(synth.stack).find_error("*", Match.any_value())
    assert [f"{e.id}: {e.entry.data}" for e in errors] == []


def test_synth_wrote_a_clean_validation_report(synth: Synthesized) -> None:
    # Given the report CDK writes when validation plugins (cdk-nag) run during synth
    report = json.loads((synth.outdir / "validation-report.json").read_text(encoding="utf-8"))
    # Then no plugin reported a violation (CDK lists a plugin only when it found something;
    # that the pack does run at this synth, through build_app, is the next test's proof)
    assert report["title"] == "Validation Report"
    assert report["pluginReports"] == []


def test_synth_runs_the_aws_solutions_pack_and_fails_on_a_finding(tmp_path: Path) -> None:
    # Given the app as infra.app builds it, plus one resource that breaks an AwsSolutions rule
    app, stack = build_app(outdir=str(tmp_path))
    sqs.Queue(stack, "QueueWithoutTls")
    # When it is synthesized, Then synth fails and the report names the pack and the rule
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text(encoding="utf-8"))
    (plugin,) = report["pluginReports"]
    assert plugin["pluginName"] == "AwsSolutions"
    assert plugin["conclusion"] == "failure"
    rules = {v["ruleName"] for v in plugin["violations"]}
    assert "AwsSolutions-SQS4" in rules


@pytest.mark.parametrize("context", [(), FLUSS_CONTEXT], ids=["default", "fluss"])
def test_every_acknowledgment_answers_a_finding(tmp_path: Path, context) -> None:
    # Given the app built with its acknowledgments recorded, not applied
    with acknowledgments_withheld() as acknowledged:
        app, _ = build_app(context=dict(context), outdir=str(tmp_path))
    report = AwsSolutionsChecks(verbose=True).validate_scope(app)
    findings = [
        (resource.construct_path, violation.rule_name)
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    # Then each acknowledgment matches a finding of its rule on its construct or below it
    stale = [
        (path, rule)
        for path, rule in acknowledged
        if not any(
            found_rule == rule and (found_path == path or found_path.startswith(f"{path}/"))
            for found_path, found_rule in findings
        )
    ]
    assert acknowledged
    assert stale == []


@pytest.mark.parametrize("context", [(), FLUSS_CONTEXT], ids=["default", "fluss"])
def test_cfn_lint_finds_no_errors(context) -> None:
    synth = synthesize_app(context)
    matches = lint(
        json.dumps(synth.template_json),
        regions=LINT_REGIONS,
        config=ManualArgs(regions=LINT_REGIONS),
    )
    errors = [f"{m.rule.id} {m.message} ({m.path})" for m in matches if m.rule.id.startswith("E")]
    assert errors == []
