"""The grants a function's role is given, spelled out: ledger calls, bucket listing, object
actions under prefixes, the pointer deny, and EMR Serverless job runs.

No CDK grant_* action groups: tests/deployed runs every path of every function under the
role synthesized here, with IAM enforced, and fails on a refused call or an unused grant.
Which function gets which grant: function_roles.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3

from infra import names
from infra.constructs.emr import EMR_SERVICE_PRINCIPAL, SparkJobs, listing_condition
from infra.nag import acknowledge, arn_of, iam5
from snapledger.adapters.table_definition import KIND_INDEX, REGISTERED_INDEX
from snapledger.layout import GENERATION_POINTER_NAME, LATEST_POINTER_NAME
from snapledger.layouts.registry import PrefixGrants

#: A prefix of the layout map whose layout has one of its own: (layout, prefix, what the
#: functions do there: the registry's ``Registered.grants``).
RootedPrefix = tuple[str, str, PrefixGrants]

# The prefixes each function's code lists (s3:prefix of its ListBucket): register a
# snapshot's files, track_changelog and launch a lineage's changelog (coverage), gc both
# (expiry, the orphan sweep, segments below the trim point). tests/deployed runs each.
LISTED_PREFIXES: dict[str, tuple[str, ...]] = {
    "register": (names.SNAPSHOTS_PREFIX,),
    "track_changelog": (names.CHANGELOG_PREFIX,),
    "launch": (names.CHANGELOG_PREFIX,),
    "gc": (names.SNAPSHOTS_PREFIX, names.CHANGELOG_PREFIX),
}
# Keys named like a pointer deeper than a pointer's place: never register's to write.
NOT_A_POINTER_KEYS = (
    f"{names.SNAPSHOTS_PREFIX}*/*/*/{LATEST_POINTER_NAME}",
    f"{names.SNAPSHOTS_PREFIX}*/*/{GENERATION_POINTER_NAME}",
)
REGISTER_POINTER_DENY_SID = "OnlyTheLineagesOwnPointers"

# The table calls each function's code makes, and nothing else. Writes are conditional
# Puts (alone, or inside TransactWriteItems, which IAM checks item by item as PutItem or
# DeleteItem); GetItem reads one item (a job), BatchGetItem loads a log's HEAD and items for
# a command, Query reads events, segments and pages. gc's DeleteItem removes its resume
# checkpoint when a run completes, and a stream's POLICY item on policy_reset (inside the
# stream log's transaction); its ConditionChecks (IAM: ConditionCheckItem) are the snapshots
# an expiry or a mark read without writing (the witnesses, the trim point's snapshot); its
# Query reads each lineage's tracked segments past its latest snapshot (the changelog
# records since it, a per-stream metric). tests/deployed runs every path.
_GET, _BATCH_GET, _QUERY = "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"
_PUT, _DELETE, _CHECK = "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"
# A job's UpdateItem sets its run-id pointer's TTL as the job finishes (inside the job's
# transaction: dynamodb_jobs._pointer_expiry).
_UPDATE = "dynamodb:UpdateItem"
LEDGER_ACTIONS: dict[str, tuple[str, ...]] = {
    "register": (_BATCH_GET, _PUT),
    "track_changelog": (_GET, _BATCH_GET, _QUERY, _PUT),
    # launch reads snapshots through the indexes only (INDEX_READERS); its DeleteItem
    # deletes a producer's registered offsets (producer_offsets_delete, docs/fluss.md).
    "launch": (_GET, _BATCH_GET, _PUT, _DELETE),
    "job_state": (_GET, _BATCH_GET, _PUT, _UPDATE),
    "query": (_GET, _QUERY),
    "gc": (_GET, _BATCH_GET, _QUERY, _PUT, _DELETE, _CHECK, _UPDATE),
}
# The ledger's sparse indexes each function queries: by_kind lists all lineages or jobs
# and finds a snapshot by id (query; launch's base snapshot; gc's holds); registered finds
# the snapshot as of an LSN or a time (query; launch's base snapshot) and a lineage's live
# records (gc's planning; register's, for a manifest that references files outside its
# folder: services/reference_reads.py).
INDEX_READERS: dict[str, tuple[str, ...]] = {
    "register": (REGISTERED_INDEX,),
    "query": (KIND_INDEX, REGISTERED_INDEX),
    "launch": (KIND_INDEX, REGISTERED_INDEX),
    "gc": (KIND_INDEX, REGISTERED_INDEX),
}


def role_of(function: lambda_.Function) -> iam.IRole:
    if function.role is None:  # pragma: no cover - every function is given its own role
        raise ValueError(f"{function.node.path} has no role")
    return function.role


@dataclass(frozen=True, slots=True)
class Grants:
    """Grants on the stack's table, bucket and Spark application, to one function at a time."""

    table: dynamodb.ITable
    bucket: s3.IBucket
    spark: SparkJobs
    rooted: tuple[RootedPrefix, ...] = ()

    def ledger(self, function: lambda_.Function, function_name: str) -> None:
        table_arn = self.table.table_arn
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Ledger", actions=list(LEDGER_ACTIONS[function_name]), resources=[table_arn]
            )
        )
        for index in INDEX_READERS.get(function_name, ()):
            # One statement per index, so an index a function no longer reads shows as unused.
            function.add_to_role_policy(
                iam.PolicyStatement(
                    sid=f"LedgerIndex{index.title().replace('_', '')}",
                    actions=["dynamodb:Query"],
                    resources=[f"{table_arn}/index/{index}"],
                )
            )

    def listed(self, name: str) -> tuple[str, ...]:
        """The prefixes ``name``'s code lists: its own, and each rooted prefix whose layout
        it reads."""
        return LISTED_PREFIXES[name] + tuple(
            f"{prefix}/" for _, prefix, grants in self.rooted if name in grants.readers
        )

    def rooted_by_layout(self) -> dict[str, tuple[PrefixGrants, tuple[str, ...]]]:
        """The rooted prefixes grouped by layout (in the map's order): each layout's grants
        and its prefixes."""
        grouped: dict[str, tuple[PrefixGrants, tuple[str, ...]]] = {}
        for layout, prefix, grants in self.rooted:
            grouped[layout] = (grants, (*grouped.get(layout, (grants, ()))[1], prefix))
        return grouped

    def listing(self, function: lambda_.Function, name: str) -> None:
        # ListBucket is a bucket-level action: it returns key names (never data) of this
        # bucket only, and only under the prefixes the function's code lists (s3:prefix).
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListTheBucket",
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions=listing_condition(self.listed(name)),
            )
        )

    def objects(
        self,
        function: lambda_.Function,
        action: str,
        prefixes: tuple[str, ...],
        what: str,
        *,
        wildcard: bool = True,
        sid: str | None = None,
        conditions: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """``action`` on the objects under ``prefixes`` (``wildcard``), or on the keys that
        match them as patterns (e.g. ``snapshots/*/*/latest.json``), under ``conditions``."""
        bucket = self.bucket
        patterns = [f"{p}*" if wildcard else p for p in prefixes]
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid=sid,
                actions=[action],
                resources=[bucket.arn_for_objects(p) for p in patterns],
                conditions=conditions,
            )
        )
        acknowledge(
            role_of(function),
            f"The function {what} ({action}) under {', '.join(prefixes)}: object keys are "
            "known only at run time, so each object ARN ends in its prefix wildcard.",
            *(iam5(f"Resource::{arn_of(bucket)}/{p}") for p in patterns),
        )

    def deny_deeper_pointers(self, function: lambda_.Function) -> None:
        """Deny PutObject on a latest.json or generation.json anywhere but a lineage's own
        and a stream's own: IAM's * crosses '/', so the pointer grants alone would match."""
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid=REGISTER_POINTER_DENY_SID,
                effect=iam.Effect.DENY,
                actions=["s3:PutObject"],
                resources=[
                    self.bucket.arn_for_objects(pattern)
                    for pattern in (
                        *NOT_A_POINTER_KEYS,
                        *(
                            f"{prefix}/{grants.deeper_pointers}"
                            for _, prefix, grants in self.rooted
                            if grants.deeper_pointers is not None
                        ),
                    )
                ],
            )
        )

    def jobs(self, function: lambda_.Function, name: str) -> None:
        """The EMR Serverless calls ``name`` makes: it starts jobs, or reads their runs."""
        if name in names.JOB_STARTING_FUNCTIONS:
            self._job_starts(function)
        if name in names.JOB_READING_FUNCTIONS:
            self._job_reads(function)

    def _job_starts(self, function: lambda_.Function) -> None:
        spark = self.spark
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="StartJobsOnThisApplication",
                actions=["emr-serverless:StartJobRun"],
                resources=[spark.application_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="TagTheJobsItStarts",
                # StartJobRun tags the run it creates (snapledger:job-id): tag-on-create
                # needs TagResource on the new run.
                actions=["emr-serverless:TagResource"],
                resources=[spark.job_runs_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassOnlyTheJobRole",
                actions=["iam:PassRole"],
                resources=[spark.job_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": EMR_SERVICE_PRINCIPAL}},
            )
        )
        self._acknowledge_job_runs(
            function, "emr-serverless:TagResource (tag-on-create of StartJobRun)"
        )

    def _job_reads(self, function: lambda_.Function) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadJobsOfThisApplication",
                actions=["emr-serverless:GetJobRun"],
                resources=[self.spark.job_runs_arn],
            )
        )
        self._acknowledge_job_runs(function, "emr-serverless:GetJobRun")

    def _acknowledge_job_runs(self, function: lambda_.Function, what: str) -> None:
        acknowledge(
            role_of(function),
            f"{what} is limited to this application's job runs; run ids are minted by "
            "StartJobRun, so the ARN ends in jobruns/*.",
            iam5(f"Resource::{arn_of(self.spark.application)}/jobruns/*"),
        )
