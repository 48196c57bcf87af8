"""The data plane: an EMR Serverless Spark application, its job role and the job code."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_emrserverless as emrs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra import names
from infra.constants import EMR_RELEASE_LABEL
from infra.nag import acknowledge, arn_of, iam5
from infra.packaging import stage_job_package
from snapledger.layout import GENERATION_POINTER_NAME, LATEST_POINTER_NAME

AUTO_STOP_IDLE_MINUTES = 15
# The object names of the pointers register alone writes: the job role is denied them.
POINTER_NAMES = (LATEST_POINTER_NAME, GENERATION_POINTER_NAME)
JOB_POINTER_DENY_SID = "NeverWritePointers"
# What the job lists (EMRFS listings of its inputs, its scratch and its outputs).
JOB_LISTED_PREFIXES = (
    names.CHANGELOG_PREFIX,
    names.SNAPSHOTS_PREFIX,
    names.STAGING_PREFIX,
    names.RESTORES_PREFIX,
)
# The job role's writes under snapshots/: only a create that cannot replace a key. The job
# publishes each final object with one PutObject carrying If-None-Match: * (S3 answers 412
# when the key exists; jobs/create_only.py), never a copy (EMRFS's rename sends no
# If-None-Match) nor a multipart upload (a final object is at most 5 GiB, one PutObject).
SNAPSHOT_WRITE_CONDITIONS: dict[str, dict[str, dict[str, str]]] = {
    "CreateSnapshotObjectsOnly": {"Null": {"s3:if-none-match": "false"}},
}
MAX_DISK_GB = 200
EMR_SERVICE_PRINCIPAL = "emr-serverless.amazonaws.com"


def listing_condition(prefixes: tuple[str, ...]) -> dict[str, dict[str, list[str]]]:
    """ListBucket only under ``prefixes`` (``s3:prefix``): a listing with no prefix, or
    with another, is refused."""
    return {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}}


class JobCode(Construct):
    """The job's entry point and a zip of the ``jobs`` package, uploaded as file assets."""

    def __init__(
        self, scope: Construct, construct_id: str, *, jobs_dir: Path, shared_package_dir: Path
    ) -> None:
        super().__init__(scope, construct_id)
        entrypoint = jobs_dir / names.JOB_ENTRYPOINT_NAME
        if not entrypoint.is_file():
            raise FileNotFoundError(
                f"the Spark job entry point {entrypoint} is missing; the CDK app uploads it "
                "for EMR Serverless"
            )
        self.entrypoint = s3_assets.Asset(self, "Entrypoint", path=str(entrypoint))
        staged = stage_job_package(jobs_dir, shared_package_dir, names.JOB_SHARED_MODULES)
        self.py_files = s3_assets.Asset(self, "PyFiles", path=str(staged))

    @property
    def entrypoint_uri(self) -> str:
        return self.entrypoint.s3_object_url

    @property
    def py_files_uri(self) -> str:
        return self.py_files.s3_object_url


class SparkJobs(Construct):
    """EMR Serverless application (release from constants) and the role its jobs run as.

    The application starts on the first job and stops after a short idle time, with no
    pre-initialised capacity: at rest it costs nothing. The maximum capacity bounds what a
    runaway job can spend.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        jobs_dir: Path,
        shared_package_dir: Path,
        max_vcpu: int,
        max_memory_gb: int,
    ) -> None:
        super().__init__(scope, construct_id)
        # The maximum capacity, which launch sizes each job within (snapledger.core.job_sizing).
        self.max_vcpu, self.max_memory_gb, self.max_disk_gb = max_vcpu, max_memory_gb, MAX_DISK_GB
        self.code = JobCode(self, "Code", jobs_dir=jobs_dir, shared_package_dir=shared_package_dir)
        self.application = self._build_application(bucket, max_vcpu, max_memory_gb)
        self.job_role = self._build_job_role()
        self._grant_job_role(bucket)

    @property
    def application_id(self) -> str:
        return self.application.attr_application_id

    @property
    def application_arn(self) -> str:
        return self.application.attr_arn

    @property
    def job_runs_arn(self) -> str:
        """ARN pattern of this application's job runs (ids are minted by StartJobRun)."""
        return f"{self.application.attr_arn}/jobruns/*"

    def _build_application(
        self, bucket: s3.IBucket, max_vcpu: int, max_memory_gb: int
    ) -> emrs.CfnApplication:
        return emrs.CfnApplication(
            self,
            "Application",
            name=f"{Stack.of(self).stack_name}-spark",
            release_label=EMR_RELEASE_LABEL,
            type="SPARK",
            architecture="ARM64",
            auto_start_configuration=emrs.CfnApplication.AutoStartConfigurationProperty(
                enabled=True
            ),
            auto_stop_configuration=emrs.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=AUTO_STOP_IDLE_MINUTES
            ),
            maximum_capacity=emrs.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=f"{max_vcpu} vCPU", memory=f"{max_memory_gb} GB", disk=f"{MAX_DISK_GB} GB"
            ),
            monitoring_configuration=emrs.CfnApplication.MonitoringConfigurationProperty(
                s3_monitoring_configuration=emrs.CfnApplication.S3MonitoringConfigurationProperty(
                    log_uri=bucket.s3_url_for_object(names.EMR_LOGS_PREFIX)
                )
            ),
        )

    def _build_job_role(self) -> iam.Role:
        stack = Stack.of(self)
        return iam.Role(
            self,
            "JobRole",
            description="Runtime role of snapledger's Spark jobs on EMR Serverless",
            # Only this application may assume it (confused-deputy guard).
            assumed_by=iam.ServicePrincipal(
                EMR_SERVICE_PRINCIPAL,
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": self.application.attr_arn},
                },
            ),
        )

    def _grant_job_role(self, bucket: s3.IBucket) -> None:
        """Exactly the S3 calls a job makes (AWS's sample runtime policy: Get, Put, List,
        Delete), each on the prefixes it needs; no grant_* action groups.

        Reads: the changelog and the base snapshot. Scratch: Spark writes its output (and its
        commit protocol's temporary files) under _staging/, which the job owns entirely.
        Results: each finished file is read from _staging/ and put, only if its key is absent,
        into a new snapshot prefix or a restore prefix, and the job writes the manifest or
        restore descriptor last, the same way.
        """
        role = self.job_role
        snapshots, changelog = names.SNAPSHOTS_PREFIX, names.CHANGELOG_PREFIX
        staging, restores = names.STAGING_PREFIX, names.RESTORES_PREFIX
        statements = {
            "ReadInputsAndOwnOutputs": (
                ["s3:GetObject"],
                [f"{p}*" for p in (changelog, snapshots, staging, restores)],
            ),
            # Its own prefixes: scratch, restore outputs, EMR's logs.
            "WriteOwnPrefixesAndLogs": (
                ["s3:PutObject", "s3:AbortMultipartUpload"],
                [f"{p}*" for p in (staging, restores, names.EMR_LOGS_PREFIX)],
            ),
            # Deletes: its own scratch and restore outputs; under snapshots/ only EMRFS
            # folder markers, never data or manifests.
            "DeleteScratchAndFolderMarkers": (
                ["s3:DeleteObject"],
                [f"{staging}*", f"{restores}*", f"{snapshots}{names.EMRFS_FOLDER_MARKER}"],
            ),
        }
        for sid, (actions, patterns) in statements.items():
            role.add_to_policy(
                iam.PolicyStatement(
                    sid=sid,
                    actions=actions,
                    resources=[bucket.arn_for_objects(pattern) for pattern in patterns],
                )
            )
        # Under snapshots/ a job only adds new keys (issues 27, 37): a PutObject with
        # If-None-Match (S3's conditional create); a CopyObject (which sends none) or a
        # multipart upload's calls are refused.
        for sid, condition in SNAPSHOT_WRITE_CONDITIONS.items():
            role.add_to_policy(
                iam.PolicyStatement(
                    sid=sid,
                    actions=["s3:PutObject"],
                    resources=[bucket.arn_for_objects(f"{snapshots}*")],
                    conditions=condition,
                )
            )
        # Never a pointer, whatever an Allow above (or added later) says.
        role.add_to_policy(
            iam.PolicyStatement(
                sid=JOB_POINTER_DENY_SID,
                effect=iam.Effect.DENY,
                actions=["s3:PutObject"],
                resources=[bucket.arn_for_objects(f"*/{name}") for name in POINTER_NAMES],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ListTheBucket",
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions=listing_condition(JOB_LISTED_PREFIXES),
            )
        )
        # The job code: exactly the two asset objects (Asset.grant_read would open the whole
        # CDK assets bucket, i.e. every stack's code in the account and region).
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadJobCode",
                actions=["s3:GetObject"],
                resources=[
                    asset.bucket.arn_for_objects(asset.s3_object_key)
                    for asset in (self.code.entrypoint, self.code.py_files)
                ],
            )
        )
        bucket_arn = arn_of(bucket)
        acknowledge(
            role,
            "Spark jobs read and write objects whose keys exist only at run time, so each "
            "object ARN ends in its prefix wildcard: reads under changelog/, snapshots/, "
            "_staging/ and restores/; writes under _staging/, restores/ and emr-logs/, and "
            "under snapshots/ only new keys (PutObject with If-None-Match); deletes under "
            "_staging/ and restores/ (which jobs own).",
            *(
                iam5(f"Resource::{bucket_arn}/{prefix}*")
                for prefix in (
                    changelog,
                    snapshots,
                    staging,
                    restores,
                    names.EMR_LOGS_PREFIX,
                )
            ),
        )
        acknowledge(
            role,
            "EMRFS removes its '<dir>_$folder$' marker objects once files land in a prefix; "
            "this pattern matches only those markers, never snapshot data or manifests.",
            iam5(f"Resource::{bucket_arn}/{snapshots}{names.EMRFS_FOLDER_MARKER}"),
        )
