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
from infra.packaging import stage_python_package

AUTO_STOP_IDLE_MINUTES = 15
MAX_DISK_GB = 200
EMR_SERVICE_PRINCIPAL = "emr-serverless.amazonaws.com"


class JobCode(Construct):
    """The job's entry point and a zip of the ``jobs`` package, uploaded as file assets."""

    def __init__(self, scope: Construct, construct_id: str, *, jobs_dir: Path) -> None:
        super().__init__(scope, construct_id)
        entrypoint = jobs_dir / names.JOB_ENTRYPOINT_NAME
        if not entrypoint.is_file():
            raise FileNotFoundError(
                f"the Spark job entry point {entrypoint} is missing; the CDK app uploads it "
                "for EMR Serverless"
            )
        self.entrypoint = s3_assets.Asset(self, "Entrypoint", path=str(entrypoint))
        self.py_files = s3_assets.Asset(self, "PyFiles", path=str(stage_python_package(jobs_dir)))

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
        max_vcpu: int,
        max_memory_gb: int,
    ) -> None:
        super().__init__(scope, construct_id)
        self.code = JobCode(self, "Code", jobs_dir=jobs_dir)
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
        role = self.job_role
        # Reads: the changelog and the base snapshot.
        bucket.grant_read(role, f"{names.CHANGELOG_PREFIX}*")
        bucket.grant_read(role, f"{names.SNAPSHOTS_PREFIX}*")
        # Scratch: Spark writes its output (and its commit protocol's temporary files) under
        # _staging/, which the job owns entirely.
        bucket.grant_read_write(role, f"{names.STAGING_PREFIX}*")
        # Results: finished files are renamed (copied) into a new snapshot prefix or a
        # restore prefix, and the job writes the manifest or restore descriptor last.
        bucket.grant_put(role, f"{names.SNAPSHOTS_PREFIX}*")
        bucket.grant_read_write(role, f"{names.RESTORES_PREFIX}*")
        bucket.grant_put(role, f"{names.EMR_LOGS_PREFIX}*")
        # Under snapshots/ the job may delete EMRFS folder markers, never data or manifests.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DeleteFolderMarkersUnderSnapshots",
                actions=["s3:DeleteObject"],
                resources=[
                    bucket.arn_for_objects(f"{names.SNAPSHOTS_PREFIX}{names.EMRFS_FOLDER_MARKER}")
                ],
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
            "object ARN ends in its prefix wildcard: reads under changelog/ and snapshots/, "
            "writes under snapshots/, restores/ and emr-logs/, and its own _staging/ scratch.",
            *(
                iam5(f"Resource::{bucket_arn}/{prefix}*")
                for prefix in (
                    names.CHANGELOG_PREFIX,
                    names.SNAPSHOTS_PREFIX,
                    names.STAGING_PREFIX,
                    names.RESTORES_PREFIX,
                    names.EMR_LOGS_PREFIX,
                )
            ),
        )
        acknowledge(
            role,
            "EMRFS removes its '<dir>_$folder$' marker objects once files land in a prefix; "
            "this pattern matches only those markers, never snapshot data or manifests.",
            iam5(f"Resource::{bucket_arn}/{names.SNAPSHOTS_PREFIX}{names.EMRFS_FOLDER_MARKER}"),
        )
        acknowledge(
            role,
            "These action groups are what CDK's bucket.grant_read / grant_put / "
            "grant_read_write emit (object reads, listing, multipart-upload abort, and delete "
            "within _staging/ and restores/, which jobs own); each is limited to the prefixes "
            "above.",
            iam5("Action::s3:GetObject*"),
            iam5("Action::s3:GetBucket*"),
            iam5("Action::s3:List*"),
            iam5("Action::s3:Abort*"),
            iam5("Action::s3:DeleteObject*"),
        )
