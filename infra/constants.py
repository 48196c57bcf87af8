"""Names in one place: the CDK app, the CLI and the tests read them from here."""

from __future__ import annotations

from snapledger import emr_release, stack_names
from snapledger.models.requests import DETAIL_TYPE_ACTIONS, SNAPSHOT_STREAM_DETAIL_TYPE

# The names the stack shares with the client and the functions: declared once, there.
SERVICE_NAME = stack_names.SERVICE_NAME
STACK_NAME = stack_names.STACK_NAME
METRICS_NAMESPACE = stack_names.METRICS_NAMESPACE

# The EMR Serverless release the app deploys, its Spark and the jobs' interpreter: defined
# beside the launcher that ships them (function code cannot import infra), named here too.
EMR_RELEASE_LABEL = emr_release.EMR_RELEASE_LABEL
EMR_SPARK_VERSION = emr_release.EMR_SPARK_VERSION
JOB_PYTHON = emr_release.JOB_PYTHON

# Lambda functions: name -> handler ("functions/{name}.py" defines ``handler``).
FUNCTION_NAMES = ("register", "track_changelog", "launch", "job_state", "query", "gc")

# Custom EventBridge source and detail types accepted by the launch function: one per job
# kind (snapledger.job_kinds' rows), then the stream snapshot's.
EVENT_SOURCE = "snapledger"
LAUNCH_DETAIL_TYPES = (*DETAIL_TYPE_ACTIONS, SNAPSHOT_STREAM_DETAIL_TYPE)

# Stack outputs the CLI reads to find a deployment.
OUTPUT_TABLE = "LedgerTableName"
OUTPUT_BUCKET = "SnapshotBucketName"
OUTPUT_EVENT_BUS = "EventBusName"
OUTPUT_EMR_APPLICATION = "EmrApplicationId"
OUTPUT_FUNCTION_PREFIX = stack_names.OUTPUT_FUNCTION_PREFIX
