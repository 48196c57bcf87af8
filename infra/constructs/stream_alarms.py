"""Per-stream alarms and the per-stream dashboard, on the metrics the functions emit with the
stream as a dimension (``snapledger.entrypoints.stream_metrics``).

Alarms watch the ``service``-only totals (a rejection, a fence, a failed job on any stream;
the oldest latest snapshot of all), plus one staleness alarm per stream given a threshold
of its own (``staleAfterHours``), on that stream's metric. The dashboard draws each metric
with one line per stream (a ``SEARCH`` on the ``service`` + ``Stream`` dimensions), so a
stream that appears later is drawn without a redeploy.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from infra import names
from infra.constants import METRICS_NAMESPACE, SERVICE_NAME
from snapledger.entrypoints import stream_metrics as sm

PERIOD = Duration.minutes(5)
# gc publishes each lineage's age once per run: a window that always holds one run.
STALENESS_PERIOD = Duration.hours(names.GC_SCHEDULE_HOURS)
#: Alarmed at one or more in a period (the service-wide totals).
COUNTED = {
    sm.REGISTRATION_REJECTED: (
        "RegistrationsRejected",
        "snapledger: a snapshot manifest was rejected (see the per-stream dashboard for which "
        "stream, and the REJECTED record's reason)",
    ),
    sm.REGISTRATION_FENCED: (
        "RegistrationsFenced",
        "snapledger: a snapshot was fenced (written by a producer with a stale epoch: two "
        "writers on one partition?)",
    ),
    sm.JOBS_FAILED: (
        "JobsFailed",
        "snapledger: a job failed (its run failed, its launch was refused, or the stuck-job "
        "sweeper failed it)",
    ),
}


class StreamAlarms(Construct):
    """The per-stream alarms and dashboard; ``alarms`` for the caller to route."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stale_after_hours_default: float,
        stale_after_hours: dict[str, float],
        add_action: Callable[[cloudwatch.Alarm], None],
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []
        self._add_action = add_action
        for metric_name, (alarm_id, description) in COUNTED.items():
            self._alarm(alarm_id, total(metric_name, "Sum", PERIOD), 1, description)
        if stale_after_hours_default:
            self._alarm(
                "SnapshotStale",
                total(sm.SNAPSHOT_AGE_HOURS, "Maximum", STALENESS_PERIOD),
                stale_after_hours_default,
                f"snapledger: a lineage's latest snapshot is over {stale_after_hours_default:g} "
                "hours old (the per-stream dashboard shows which stream)",
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )
        for stream, hours in sorted(stale_after_hours.items()):
            self._alarm(
                f"SnapshotStale-{stream}",
                per_stream(sm.SNAPSHOT_AGE_HOURS, stream, "Maximum", STALENESS_PERIOD),
                hours,
                f"snapledger: a lineage of stream {stream} has a latest snapshot over "
                f"{hours:g} hours old",
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )
        self.dashboard = self._build_dashboard(stale_after_hours_default)

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        comparison: cloudwatch.ComparisonOperator = (
            cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        ),
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=comparison,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        self._add_action(alarm)
        self.alarms.append(alarm)

    def _build_dashboard(self, stale_after_hours_default: float) -> cloudwatch.Dashboard:
        dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{Stack.of(self).stack_name}-streams-{Aws.REGION}",
        )
        annotations = (
            [cloudwatch.HorizontalAnnotation(value=stale_after_hours_default, label="stale")]
            if stale_after_hours_default
            else []
        )
        dashboard.add_widgets(
            graph(
                "Latest snapshot age, hours (oldest lineage)",
                sm.SNAPSHOT_AGE_HOURS,
                "Maximum",
                STALENESS_PERIOD,
                annotations,
            ),
            graph(
                "Changelog records since the latest snapshot",
                sm.CHANGELOG_RECORDS_SINCE_SNAPSHOT,
                "Maximum",
                PERIOD,
            ),
        )
        dashboard.add_widgets(
            graph("Registrations rejected", sm.REGISTRATION_REJECTED, "Sum", PERIOD),
            graph("Registrations fenced", sm.REGISTRATION_FENCED, "Sum", PERIOD),
            graph("Manifests vanished", sm.REGISTRATION_VANISHED, "Sum", PERIOD),
        )
        dashboard.add_widgets(
            graph("Jobs failed", sm.JOBS_FAILED, "Sum", PERIOD),
            graph("GC: snapshots deleted", sm.GC_SNAPSHOTS_DELETED, "Sum", STALENESS_PERIOD),
        )
        dashboard.add_widgets(
            graph("GC: bytes deleted", sm.GC_BYTES_DELETED, "Sum", STALENESS_PERIOD),
            cloudwatch.AlarmStatusWidget(title="Stream alarms", alarms=self.alarms, width=12),
        )
        return dashboard


def total(metric_name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
    """The metric under ``service`` alone: every stream's values together."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={names.SERVICE_DIMENSION: SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


def per_stream(
    metric_name: str, stream: str, statistic: str, period: Duration
) -> cloudwatch.Metric:
    """One stream's metric (``service`` + ``Stream``)."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={names.SERVICE_DIMENSION: SERVICE_NAME, sm.STREAM_DIMENSION: stream},
        statistic=statistic,
        period=period,
    )


def search_expression(metric_name: str, statistic: str, period: Duration) -> str:
    """``SEARCH`` for ``metric_name`` under ``service`` + ``Stream``: one line a stream."""
    schema = f"{{{METRICS_NAMESPACE},{names.SERVICE_DIMENSION},{sm.STREAM_DIMENSION}}}"
    query = f'{schema} MetricName="{metric_name}" {names.SERVICE_DIMENSION}="{SERVICE_NAME}"'
    return f"SEARCH('{query}', '{statistic}', {int(period.to_seconds())})"


def graph(
    title: str,
    metric_name: str,
    statistic: str,
    period: Duration,
    annotations: list[cloudwatch.HorizontalAnnotation] | None = None,
) -> cloudwatch.GraphWidget:
    """A graph of ``metric_name`` with one line per stream."""
    return cloudwatch.GraphWidget(
        title=title,
        left=[
            cloudwatch.MathExpression(
                expression=search_expression(metric_name, statistic, period),
                using_metrics={},
                label="",
                period=period,
            )
        ],
        left_annotations=annotations or None,
        width=12,
    )
