"""Alarms (function errors and throttles, failure-queue depth, stuck jobs) and a dashboard."""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import names
from infra.constants import METRICS_NAMESPACE, SERVICE_NAME

PERIOD = Duration.minutes(5)
# gc publishes StuckJobs once per run; look at a window that always holds one run.
STUCK_JOBS_PERIOD = Duration.hours(names.GC_SCHEDULE_HOURS)


class Observability(Construct):
    """One alarm per failure signal, each with a threshold of 1: in this system any error,
    throttle, dead-lettered event or stuck job is worth a look."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.Function],
        queues: dict[str, sqs.IQueue],
        table: dynamodb.ITable,
        alarm_topic_arn: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._action = (
            cw_actions.SnsAction(sns.Topic.from_topic_arn(self, "AlarmTopic", alarm_topic_arn))
            if alarm_topic_arn
            else None
        )
        self.alarms: list[cloudwatch.Alarm] = []
        self.stuck_jobs = cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=names.STUCK_JOBS_METRIC,
            dimensions_map={names.SERVICE_DIMENSION: SERVICE_NAME},
            statistic="Maximum",
            period=STUCK_JOBS_PERIOD,
        )
        self._build_function_alarms(functions)
        self._build_queue_alarms(queues)
        self._build_stuck_jobs_alarm()
        self.dashboard = self._build_dashboard(functions, queues, table)

    def _alarm(
        self, construct_id: str, metric: cloudwatch.IMetric, description: str
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        self.route(alarm)
        self.alarms.append(alarm)
        return alarm

    def route(self, alarm: cloudwatch.Alarm) -> None:
        """Send ``alarm``'s changes to the alarm topic, if the stack has one."""
        if self._action:
            alarm.add_alarm_action(self._action)

    def _build_function_alarms(self, functions: dict[str, lambda_.Function]) -> None:
        for name, function in functions.items():
            construct_id = names.function_construct_id(name)
            self._alarm(
                f"{construct_id}Errors",
                function.metric_errors(period=PERIOD, statistic="Sum"),
                f"snapledger {name}: the function raised errors",
            )
            self._alarm(
                f"{construct_id}Throttles",
                function.metric_throttles(period=PERIOD, statistic="Sum"),
                f"snapledger {name}: invocations were throttled (reserved concurrency reached)",
            )

    def _build_queue_alarms(self, queues: dict[str, sqs.IQueue]) -> None:
        for name, queue in queues.items():
            self._alarm(
                f"{names.function_construct_id(name)}FailuresVisible",
                queue.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic="Maximum"
                ),
                f"snapledger {name}: events failed after all retries and wait in the queue",
            )

    def _build_stuck_jobs_alarm(self) -> None:
        self._alarm(
            "StuckJobs",
            self.stuck_jobs,
            "snapledger: gc found jobs whose final state event never arrived",
        )
        for construct_id, metric_name, description in (
            (
                "GcStreamsFailed",
                names.GC_STREAMS_FAILED_METRIC,
                "snapledger: gc could not collect a stream (the others were collected)",
            ),
            (
                "GcPointersUnrepaired",
                names.GC_POINTERS_UNREPAIRED_METRIC,
                "snapledger: a latest.json lags the ledger and gc could not repair it",
            ),
            (
                "GcRestateLatestsBroken",
                names.GC_RESTATE_LATESTS_BROKEN_METRIC,
                "snapledger: a Restate partition's latest snapshot was broken (gc healed it to "
                "the newest retained one that passes, or found none: see the gc report)",
            ),
        ):
            self._alarm(
                construct_id,
                cloudwatch.Metric(
                    namespace=METRICS_NAMESPACE,
                    metric_name=metric_name,
                    dimensions_map={names.SERVICE_DIMENSION: SERVICE_NAME},
                    statistic="Maximum",
                    period=STUCK_JOBS_PERIOD,
                ),
                description,
            )

    def _build_dashboard(
        self,
        functions: dict[str, lambda_.Function],
        queues: dict[str, sqs.IQueue],
        table: dynamodb.ITable,
    ) -> cloudwatch.Dashboard:
        # Dashboard names are unique per account across regions: include the region.
        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{Stack.of(self).stack_name}-{Aws.REGION}"
        )
        fns = list(functions.items())
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Invocations",
                left=[f.metric_invocations(label=n, period=PERIOD) for n, f in fns],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Errors and throttles",
                left=[f.metric_errors(label=f"{n} errors", period=PERIOD) for n, f in fns],
                right=[f.metric_throttles(label=f"{n} throttles", period=PERIOD) for n, f in fns],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Duration p99",
                left=[f.metric_duration(label=n, period=PERIOD, statistic="p99") for n, f in fns],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Failure queues (messages visible)",
                left=[
                    q.metric_approximate_number_of_messages_visible(label=n, period=PERIOD)
                    for n, q in queues.items()
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Ledger table",
                left=[
                    table.metric_consumed_write_capacity_units(period=PERIOD),
                    table.metric_consumed_read_capacity_units(period=PERIOD),
                ],
                right=[
                    table.metric_throttled_requests_for_operations(
                        operations=[
                            dynamodb.Operation.TRANSACT_WRITE_ITEMS,
                            dynamodb.Operation.QUERY,
                            dynamodb.Operation.GET_ITEM,
                        ],
                        period=PERIOD,
                    )
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Stuck jobs (reported by gc)", left=[self.stuck_jobs], width=6
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=6),
        )
        return dashboard
