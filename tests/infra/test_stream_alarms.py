"""Per-stream alarms and dashboard: each alarm in the template on the metric the functions
emit (``snapledger.entrypoints.stream_metrics``), with its dimensions and threshold."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra import names
from infra.config import StackConfig
from infra.constants import METRICS_NAMESPACE, SERVICE_NAME
from infra.constructs.stream_alarms import StreamAlarms
from snapledger.entrypoints import stream_metrics as sm
from tests.infra.conftest import Synthesized

STREAM_METRICS = {
    sm.REGISTRATION_REJECTED,
    sm.REGISTRATION_FENCED,
    sm.REGISTRATION_VANISHED,
    sm.JOBS_FAILED,
    sm.GC_SNAPSHOTS_DELETED,
    sm.GC_BYTES_DELETED,
    sm.SNAPSHOT_AGE_HOURS,
    sm.CHANGELOG_RECORDS_SINCE_SNAPSHOT,
}
SERVICE_ONLY = [{"Name": "service", "Value": SERVICE_NAME}]


def alarms_on(template: dict[str, Any], metric_name: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("MetricName") == metric_name
        and r["Properties"].get("Namespace") == METRICS_NAMESPACE
    ]


@pytest.mark.parametrize(
    "metric_name", [sm.REGISTRATION_REJECTED, sm.REGISTRATION_FENCED, sm.JOBS_FAILED]
)
def test_any_rejection_fence_or_failed_job_alarms(synth: Synthesized, metric_name: str) -> None:
    [alarm] = alarms_on(synth.template_json, metric_name)
    assert alarm["Dimensions"] == SERVICE_ONLY  # the total every stream's blob publishes
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Sum", 300, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"


def test_the_default_staleness_alarm_watches_the_oldest_latest_of_every_stream(
    synth: Synthesized,
) -> None:
    [alarm] = alarms_on(synth.template_json, sm.SNAPSHOT_AGE_HOURS)
    assert alarm["Dimensions"] == SERVICE_ONLY
    assert alarm["Statistic"] == "Maximum"
    assert alarm["Period"] == names.GC_SCHEDULE_HOURS * 3600  # one GC run in every period
    assert alarm["Threshold"] == StackConfig().stale_after_hours_default == 48
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"


def dashboard_widgets(synth: Synthesized, dashboard: Any) -> list[dict[str, Any]]:
    """The widgets of a dashboard's body (its ``Fn::Join``, tokens as ``"TOKEN"``)."""
    resource = synth.resources("AWS::CloudWatch::Dashboard")[synth.logical_id(dashboard)]
    parts = resource["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = "".join(p if isinstance(p, str) else "TOKEN" for p in parts)
    widgets: list[dict[str, Any]] = json.loads(body)["widgets"]
    return widgets


def test_the_per_stream_dashboard_draws_each_metric_one_line_a_stream(
    synth: Synthesized,
) -> None:
    synth.template.resource_count_is("AWS::CloudWatch::Dashboard", 2)
    widgets = dashboard_widgets(synth, synth.stack.stream_alarms.dashboard)
    expressions = [
        m[0]["expression"]
        for w in widgets
        for m in w["properties"].get("metrics", [])
        if isinstance(m[0], dict)
    ]
    schema = f"{{{METRICS_NAMESPACE},service,{sm.STREAM_DIMENSION}}}"
    drawn = {
        e.split('MetricName="')[1].split('"')[0] for e in expressions if e.startswith("SEARCH(")
    }
    assert all(schema in e and f'service="{SERVICE_NAME}"' in e for e in expressions)
    assert drawn == STREAM_METRICS
    [status] = [w for w in widgets if w["type"] == "alarm"]
    assert len(status["properties"]["alarms"]) == len(synth.stack.stream_alarms.alarms) == 4


def stream_alarms_template(context: dict[str, Any]) -> dict[str, Any]:
    """Only the construct, configured from ``context`` as the app is (no full synth)."""
    app = App(context=context)
    config = StackConfig.from_context(app.node)
    stack = Stack(app, "S")
    StreamAlarms(
        stack,
        "StreamAlarms",
        stale_after_hours_default=config.stale_after_hours_default,
        stale_after_hours=config.stale_after_hours,
        add_action=lambda alarm: None,
    )
    return Template.from_stack(stack).to_json()  # type: ignore[no-any-return]


def test_a_stream_given_a_threshold_gets_its_own_staleness_alarm() -> None:
    template = stream_alarms_template(
        {names.CTX_STALE_AFTER_HOURS: '{"orders": 6, "payments": 12.5}'}
    )
    alarms = alarms_on(template, sm.SNAPSHOT_AGE_HOURS)
    by_stream = {
        next((d["Value"] for d in a["Dimensions"] if d["Name"] == "Stream"), None): a
        for a in alarms
    }
    assert sorted(by_stream, key=str) == [None, "orders", "payments"]
    assert by_stream["orders"]["Threshold"] == 6 and by_stream["payments"]["Threshold"] == 12.5
    assert {"Name": "service", "Value": SERVICE_NAME} in by_stream["orders"]["Dimensions"]
    assert by_stream["orders"]["Statistic"] == "Maximum"


def test_a_default_of_zero_leaves_only_the_per_stream_staleness_alarms() -> None:
    template = stream_alarms_template(
        {names.CTX_STALE_AFTER_HOURS_DEFAULT: "0", names.CTX_STALE_AFTER_HOURS: {"audit": 96}}
    )
    [alarm] = alarms_on(template, sm.SNAPSHOT_AGE_HOURS)
    assert alarm["Threshold"] == 96


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({names.CTX_STALE_AFTER_HOURS: "orders=6"}, "must be a JSON object"),
        ({names.CTX_STALE_AFTER_HOURS: "[6]"}, "must be an object of stream to hours"),
        ({names.CTX_STALE_AFTER_HOURS: {"orders": "soon"}}, "staleAfterHours.orders: expected"),
        ({names.CTX_STALE_AFTER_HOURS: {"orders": 0}}, "more than 0"),
        ({names.CTX_STALE_AFTER_HOURS: {"no/slash": 6}}, "not a stream name"),
        ({names.CTX_STALE_AFTER_HOURS: {"orders": 72}}, "raise staleAfterHoursDefault"),
        ({names.CTX_STALE_AFTER_HOURS_DEFAULT: "-1"}, "0 or more"),
    ],
)
def test_bad_staleness_settings_say_what_to_do(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StackConfig.from_context(App(context=context).node)


def _doc_section(title: str) -> str:
    text = (names.REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    return text[start : text.find("\n## ", start + 1)]


def test_deploy_md_lists_each_stream_metric_and_each_stream_alarm(synth: Synthesized) -> None:
    section = _doc_section("Per-stream metrics and alarms")
    rows = re.findall(r"^\| `([^|]+?)` \|", section, re.MULTILINE)
    metrics_listed = {m for row in rows for m in re.findall(r"[A-Za-z_]+", row)}
    assert metrics_listed >= STREAM_METRICS
    alarm_ids = {alarm.node.id for alarm in synth.stack.stream_alarms.alarms}
    assert alarm_ids == {
        "RegistrationsRejected",
        "RegistrationsFenced",
        "JobsFailed",
        "SnapshotStale",
    }
    for alarm_id in [*alarm_ids, "SnapshotStale-{stream}"]:
        assert f"| `{alarm_id}` |" in section, alarm_id


def test_deploy_md_counts_the_alarms_it_prices(synth: Synthesized) -> None:
    costs = _doc_section("What it costs at idle")
    [counted] = re.findall(r"(\d+) standard alarms", costs)
    assert int(counted) == len(synth.resources("AWS::CloudWatch::Alarm"))
