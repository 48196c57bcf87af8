"""What each function's role is granted: exactly the calls its code makes, family by family
(registration, changelog tracking and jobs, queries, gc), in the vocabulary of
function_grants.py."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from infra import names
from infra.constructs.emr import listing_condition
from infra.constructs.function_grants import Grants

# gc's writes of a rooted layout's pointer (Restate's latest.json): only with If-Match
# (IAM's s3:if-match condition key: present), the compare-and-swap the producer itself uses.
IF_MATCH_ONLY = {"Null": {"s3:if-match": "false"}}


def pointer_write_sid(layout: str) -> str:
    """The statement id of gc's compare-and-swap writes of ``layout``'s pointers, e.g.
    ``RewriteRestateLatestOnlyByCompareAndSwap``."""
    title = "".join(part.title() for part in layout.split("-"))
    return f"Rewrite{title}LatestOnlyByCompareAndSwap"


RESTATE_POINTER_WRITE_SID = pointer_write_sid("restate")


def grant_functions(
    grants: Grants,
    functions: dict[str, lambda_.Function],
    *,
    registration_queue: sqs.IQueue,
    protect_latest: bool,
) -> None:
    """Every function's grants (one role each: the order of statements is per role)."""
    fn = functions
    grant_register(grants, fn["register"], registration_queue, protect_latest=protect_latest)
    grant_track_changelog(grants, fn["track_changelog"])
    grant_launch(grants, fn["launch"])
    grant_job_state(grants, fn["job_state"])
    grant_query(grants, fn["query"])
    grant_gc(grants, fn["gc"], registration_queue, protect_latest=protect_latest)


def grant_register(
    grants: Grants, register: lambda_.Function, queue: sqs.IQueue, *, protect_latest: bool
) -> None:
    """register: intake sends manifests to the registration queue (SendMessageBatch is
    authorized as SendMessage); the consumer reads the manifest, lists the snapshot's
    files; never deletes objects. (The event source mapping's ReceiveMessage,
    DeleteMessage, ChangeMessageVisibility, GetQueueAttributes: granted by CDK.)"""
    register.add_to_role_policy(
        iam.PolicyStatement(
            sid="QueueRegistrations",
            actions=["sqs:SendMessage"],
            resources=[queue.queue_arn],
        )
    )
    grants.ledger(register, "register")
    grants.objects(
        register,
        "s3:GetObject",
        (names.SNAPSHOTS_PREFIX,),
        "reads manifests, file footers and checksums, and latest.json",
    )
    grants.listing(register, "register")
    # register writes each lineage's latest.json and each stream's generation.json
    # (conditional PutObjects), nothing else.
    grants.objects(
        register,
        "s3:PutObject",
        (names.LATEST_POINTER_KEYS, names.GENERATION_POINTER_KEYS),
        "writes each lineage's latest.json and each stream's generation.json pointer",
        wildcard=False,
    )
    # IAM's * crosses '/': the grant above also matches a latest.json inside a snapshot
    # prefix (snapshots/s/0/<lsn>-<id>/latest.json) and a generation.json inside a
    # lineage. Only the lineage's own pointer and the stream's own are register's.
    grants.deny_deeper_pointers(register)
    _grant_rooted_reads(grants, register, "register")
    if protect_latest:
        # The latest protected in the bucket (``protectLatest``): register holds every
        # file of a snapshot it registers. PutObjectLegalHold sets ON or OFF alike: IAM
        # has one action for both.
        grants.objects(
            register,
            "s3:PutObjectLegalHold",
            (names.SNAPSHOTS_PREFIX,),
            "holds the files of each snapshot it registers",
        )
    grants.jobs(register, "register")


def grant_track_changelog(grants: Grants, track_changelog: lambda_.Function) -> None:
    """track_changelog: heads segment objects, records counts, starts compactions (which
    lists the changelog for coverage)."""
    grants.ledger(track_changelog, "track_changelog")
    grants.objects(
        track_changelog,
        "s3:GetObject",
        (names.CHANGELOG_PREFIX,),
        "reads a segment's size (HEAD)",
    )
    grants.listing(track_changelog, "track_changelog")
    grants.jobs(track_changelog, "track_changelog")


def grant_launch(grants: Grants, launch: lambda_.Function) -> None:
    """launch: resolves the snapshot in the ledger, lists the changelog for coverage, pins,
    starts the job."""
    grants.ledger(launch, "launch")
    grants.listing(launch, "launch")
    grants.jobs(launch, "launch")


def grant_job_state(grants: Grants, job_state: lambda_.Function) -> None:
    """job_state: the ledger only, and GetJobRun."""
    grants.ledger(job_state, "job_state")
    grants.jobs(job_state, "job_state")


def grant_query(grants: Grants, query: lambda_.Function) -> None:
    """query: read only; the sparse indexes list lineages and jobs and find snapshots."""
    grants.ledger(query, "query")
    grants.jobs(query, "query")


def grant_gc(
    grants: Grants, gc: lambda_.Function, queue: sqs.IQueue, *, protect_latest: bool
) -> None:
    """gc: the only function that deletes objects: expired and orphaned snapshots, and
    changelog segments below the trim point (delete_changelog_below_trim). DeleteItem
    removes its resume checkpoint when a run completes."""
    snapshots, changelog = names.SNAPSHOTS_PREFIX, names.CHANGELOG_PREFIX
    grants.ledger(gc, "gc")
    grants.listing(gc, "gc")
    grants.objects(
        gc,
        "s3:DeleteObject",
        (snapshots, changelog),
        "deletes expired and orphaned snapshots and segments below the trim point",
    )
    # gc keeps what latest.json and generation.json name, and repairs a latest.json
    # that lags the ledger (reading the latest's manifest, writing the pointer by
    # conditional PutObject); the pointers only, as register's grant.
    grants.objects(
        gc,
        "s3:GetObject",
        (snapshots,),
        "reads latest.json and generation.json, and the latest's manifest to repair one",
    )
    grants.objects(
        gc,
        "s3:PutObject",
        (names.LATEST_POINTER_KEYS,),
        "repairs a lineage's latest.json that lags the ledger",
        wildcard=False,
    )
    grants.deny_deeper_pointers(gc)
    # ... and hands a manifest the ledger never recorded to the registration queue
    # (the orphan sweep never deletes a prefix holding one).
    gc.add_to_role_policy(
        iam.PolicyStatement(
            sid="QueueUnrecordedManifests",
            actions=["sqs:SendMessage"],
            resources=[queue.queue_arn],
        )
    )
    for layout, (declared, prefixes) in grants.rooted_by_layout().items():
        _grant_rooted_reads(grants, gc, "gc", only=layout)
        # gc deletes snapshot folders' objects only (never the producer's pointer), and
        # rewrites that pointer only by compare-and-swap (If-Match).
        grants.objects(
            gc,
            "s3:DeleteObject",
            tuple(f"{prefix}/{declared.deleted}" for prefix in prefixes),
            f"deletes expired and orphaned {layout} snapshots' objects (snapshot folders only)",
            wildcard=False,
        )
        if declared.pointers is not None:
            grants.objects(
                gc,
                "s3:PutObject",
                tuple(f"{prefix}/{declared.pointers}" for prefix in prefixes),
                f"rewrites {layout}'s pointer by compare-and-swap (If-Match)",
                wildcard=False,
                sid=pointer_write_sid(layout),
                conditions=IF_MATCH_ONLY,
            )
    if protect_latest:
        # gc lists a deleted snapshot's versions and releases their legal holds. Neither
        # gc nor register may delete a version (``guardrails.py`` denies
        # s3:DeleteObjectVersion).
        grants.objects(
            gc,
            "s3:PutObjectLegalHold",
            (snapshots,),
            "releases the legal holds of the snapshots it deletes",
        )
        # ListBucketVersions, like ListBucket, is a bucket-level action: key names and
        # version ids, never data.
        gc.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListTheBucketVersions",
                actions=["s3:ListBucketVersions"],
                resources=[grants.bucket.bucket_arn],
                conditions=listing_condition((snapshots,)),
            )
        )
    grants.jobs(gc, "gc")
    # gc's stuck-job sweeper looks for the run of a job whose launch stopped before
    # recording it (ListJobRuns is on the application: run ids are what it finds).
    gc.add_to_role_policy(
        iam.PolicyStatement(
            sid="ListJobsOfThisApplication",
            actions=["emr-serverless:ListJobRuns"],
            resources=[grants.spark.application_arn],
        )
    )


def _grant_rooted_reads(
    grants: Grants, function: lambda_.Function, name: str, *, only: str | None = None
) -> None:
    """Under each prefix of a rooted layout (the layout map's; Restate's), the functions its
    registry entry names as readers read its objects (Restate: a snapshot's metadata.json,
    SST tails and latest.json); their ListBucket (``Grants.listing``) covers the prefixes
    too. register writes nothing there. ``only``: that layout's prefixes alone."""
    for layout, (declared, prefixes) in grants.rooted_by_layout().items():
        if name in declared.readers and only in (None, layout):
            grants.objects(
                function,
                "s3:GetObject",
                tuple(f"{prefix}/" for prefix in prefixes),
                f"reads {layout}'s objects under its own prefix (its manifests, file footers "
                "and pointer)",
            )
