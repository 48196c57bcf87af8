"""Configuration from environment variables, parsed once per cold start.

The CDK app sets these on each function; local runs set them from the runtime.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "SNAPLEDGER_"
# The environment variable names, for the CDK app and the local runtime.
ENV_TABLE = "SNAPLEDGER_TABLE"
ENV_ROOT = "SNAPLEDGER_ROOT"
ENV_DYNAMODB_ENDPOINT = "SNAPLEDGER_DYNAMODB_ENDPOINT"
ENV_EMR_APPLICATION_ID = "SNAPLEDGER_EMR_APPLICATION_ID"
ENV_EMR_JOB_ROLE_ARN = "SNAPLEDGER_EMR_JOB_ROLE_ARN"
ENV_JOB_ENTRYPOINT = "SNAPLEDGER_JOB_ENTRYPOINT"
ENV_JOB_PY_FILES = "SNAPLEDGER_JOB_PY_FILES"
ENV_EVENT_BUS = "SNAPLEDGER_EVENT_BUS"


class LedgerSettings(BaseSettings):
    """What every function needs: the table and the object store root."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    table: str = Field(min_length=3, max_length=255, description="DynamoDB table name")
    root: str = Field(description="Object store root: s3://bucket[/prefix] or file:///dir")
    dynamodb_endpoint: str | None = Field(
        default=None, description="Only for DynamoDB Local; unset in AWS"
    )


class JobSettings(LedgerSettings):
    """Functions that start jobs also need the EMR Serverless application."""

    emr_application_id: str = Field(min_length=1)
    emr_job_role_arn: str = Field(min_length=1)
    job_entrypoint: str = Field(min_length=1, description="s3:// URI of jobs/entrypoint.py")
    job_py_files: str = Field(default="", description="s3:// URI of the jobs zip")


@lru_cache(maxsize=1)
def ledger_settings() -> LedgerSettings:
    return LedgerSettings()  # type: ignore[call-arg]  # filled from the environment
