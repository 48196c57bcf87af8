"""cdk-nag AwsSolutions and cfn-lint on the synthesized template: no unacknowledged findings."""

from __future__ import annotations

import json

from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from tests.infra.conftest import Synthesized

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
    # Then no plugin reported a violation
    assert all(not r.get("violations") for r in report.get("pluginReports", []))


def test_cfn_lint_finds_no_errors(synth: Synthesized) -> None:
    matches = lint(
        json.dumps(synth.template_json),
        regions=LINT_REGIONS,
        config=ManualArgs(regions=LINT_REGIONS),
    )
    errors = [f"{m.rule.id} {m.message} ({m.path})" for m in matches if m.rule.id.startswith("E")]
    assert errors == []
