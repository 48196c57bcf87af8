"""The snapshot bucket (snapshots, changelog, restores, EMR logs) and its access-log bucket."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from constructs import Construct

from infra import names

NONCURRENT_VERSION_DAYS = 7
ABORT_MULTIPART_DAYS = 1
EMR_LOG_DAYS = 30
ACCESS_LOG_DAYS = 90


class SnapshotStorage(Construct):
    """The data bucket: private, TLS only, encrypted, versioned, access-logged.

    Versioning protects against a bad delete; the noncurrent-version expiry is what makes
    a GC delete actually free the space a few days later. With ``object_lock`` (the
    ``protectLatest`` setting) the bucket is created with S3 Object Lock and no default
    retention: only the legal holds snapledger puts protect objects (docs/deploy.md).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, retain: bool, object_lock: bool = False
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.object_lock = object_lock
        self.log_bucket = self._build_log_bucket(removal)
        self.bucket = self._build_bucket(removal)

    @property
    def root_uri(self) -> str:
        """The object store root the functions use (``ENV_ROOT``)."""
        return f"s3://{self.bucket.bucket_name}"

    def _build_log_bucket(self, removal: RemovalPolicy) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "AccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            # Server access logs can only be delivered to SSE-S3 buckets.
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(ACCESS_LOG_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(ABORT_MULTIPART_DAYS),
                )
            ],
            removal_policy=removal,
        )
        # (cdk-nag's S1 recognizes a server-access-log destination: nothing to acknowledge.)
        return bucket

    def _build_bucket(self, removal: RemovalPolicy) -> s3.Bucket:
        return s3.Bucket(
            self,
            "Snapshots",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            # Legal holds only: no default retention (object_lock_default_retention unset).
            object_lock_enabled=True if self.object_lock else None,
            server_access_logs_bucket=self.log_bucket,
            server_access_logs_prefix=names.ACCESS_LOGS_PREFIX,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    expired_object_delete_marker=True,
                    abort_incomplete_multipart_upload_after=Duration.days(ABORT_MULTIPART_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-job-scratch",
                    prefix=names.STAGING_PREFIX,
                    expiration=Duration.days(names.STAGING_EXPIRY_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-emr-logs",
                    prefix=names.EMR_LOGS_PREFIX,
                    expiration=Duration.days(EMR_LOG_DAYS),
                ),
            ],
            removal_policy=removal,
        )

    def route_object_created(
        self,
        *,
        register: lambda_.IFunction,
        track_changelog: lambda_.IFunction,
        rooted: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Manifest arrivals go to ``register``; changelog segments to ``track_changelog``;
        under each prefix of a layout with one of its own (``rooted``: prefix and manifest
        name, from the layout map and the registry), a snapshot's manifest (Restate's
        ``metadata.json``, written after its SSTs) goes to ``register`` and nothing else
        there invokes anything."""
        destination = s3n.LambdaDestination(register)
        self.bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            destination,
            s3.NotificationKeyFilter(prefix=names.SNAPSHOTS_PREFIX, suffix=names.MANIFEST_SUFFIX),
        )
        for prefix, manifest_name in rooted:
            self.bucket.add_event_notification(
                s3.EventType.OBJECT_CREATED,
                destination,
                s3.NotificationKeyFilter(prefix=f"{prefix}/", suffix=f"/{manifest_name}"),
            )
        self.bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            s3n.LambdaDestination(track_changelog),
            s3.NotificationKeyFilter(prefix=names.CHANGELOG_PREFIX, suffix=names.CHANGELOG_SUFFIX),
        )
