"""Names in one place: the CDK app, the CLI and the tests read them from here."""

from __future__ import annotations

SERVICE_NAME = "snapledger"
STACK_NAME = "Snapledger"
METRICS_NAMESPACE = "Snapledger"

# EMR Serverless release the app deploys; tests check the local pyspark pin agrees.
EMR_RELEASE_LABEL = "emr-spark-8.0.0"
EMR_SPARK_VERSION = "4.0"

# Lambda functions: name -> handler ("functions/{name}.py" defines ``handler``).
FUNCTION_NAMES = ("register", "track_changelog", "launch", "job_state", "query", "gc")

# Custom EventBridge source and detail types accepted by the launch function.
EVENT_SOURCE = "snapledger"
LAUNCH_DETAIL_TYPES = ("BootstrapRequested", "RestoreRequested", "CompactionRequested")

# Stack outputs the CLI reads to find a deployment.
OUTPUT_TABLE = "LedgerTableName"
OUTPUT_BUCKET = "SnapshotBucketName"
OUTPUT_EVENT_BUS = "EventBusName"
OUTPUT_EMR_APPLICATION = "EmrApplicationId"
OUTPUT_FUNCTION_PREFIX = "Function"
