"""The EMR Serverless runner against moto: client token, arguments, Python, status, errors."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from snapledger.adapters.emr_serverless import EmrServerlessRunner, spark_submit_parameters
from snapledger.emr_release import JOB_PYTHON
from snapledger.errors import JobStartError, StoreUnavailableError
from snapledger.models.jobs import PartitionPlan
from snapledger.ports import JobRunSpec

SPEC = JobRunSpec(
    job_id="restore-abc",
    kind="restore",
    stream="orders",
    root="s3://bucket",
    partitions=[PartitionPlan(partition=3, base_snapshot_id=None, base_lsn=None, target_lsn=99)],
)


def test_start_passes_the_job_id_as_client_token_and_the_plan_as_arguments():
    with mock_aws():
        client = boto3.client("emr-serverless", region_name="us-east-1")
        app = client.create_application(
            name="a", releaseLabel="emr-7.0.0", type="SPARK"
        )  # moto lacks 8.x labels
        runner = EmrServerlessRunner(
            app["applicationId"],
            "arn:aws:iam::123456789012:role/job",
            "s3://b/entry.py",
            "s3://b/jobs.zip",
            client,
        )
        sent = []
        client.meta.events.register(
            "provide-client-params.emr-serverless.StartJobRun",
            lambda params, **_: sent.append(params),
        )
        run_id = runner.start(SPEC)
        assert sent[0]["clientToken"] == "restore-abc" and sent[0]["name"] == "restore-abc"
        args = sent[0]["jobDriver"]["sparkSubmit"]["entryPointArguments"]
        assert args[args.index("--partitions") + 1] == "3"
        assert args[args.index("--target-lsn") + 1] == "99"
        assert sent[0]["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"] == (
            "--py-files s3://b/jobs.zip"
            " --conf spark.pyspark.driver.python=/usr/bin/python3.11"
            " --conf spark.pyspark.python=/usr/bin/python3.11"
            " --conf spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON=/usr/bin/python3.11"
            " --conf spark.emr-serverless.driverEnv.PYSPARK_PYTHON=/usr/bin/python3.11"
            " --conf spark.executorEnv.PYSPARK_PYTHON=/usr/bin/python3.11"
        )
        assert runner.status(run_id).state in {"SUCCESS", "RUNNING", "SUBMITTED"}


def test_the_python_is_named_even_without_a_package():
    # The release's default python3 is never trusted, whatever else is shipped
    assert spark_submit_parameters("").split() == [
        "--conf",
        f"spark.pyspark.driver.python={JOB_PYTHON}",
        "--conf",
        f"spark.pyspark.python={JOB_PYTHON}",
        "--conf",
        f"spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON={JOB_PYTHON}",
        "--conf",
        f"spark.emr-serverless.driverEnv.PYSPARK_PYTHON={JOB_PYTHON}",
        "--conf",
        f"spark.executorEnv.PYSPARK_PYTHON={JOB_PYTHON}",
    ]


@pytest.mark.parametrize(
    ("code", "error"),
    [("ValidationException", JobStartError), ("ThrottlingException", StoreUnavailableError)],
)
def test_errors_are_translated(code, error):
    client = boto3.client("emr-serverless", region_name="us-east-1")
    runner = EmrServerlessRunner(
        "app", "arn:aws:iam::123456789012:role/job", "s3://b/e.py", client=client
    )
    with Stubber(client) as stub:
        stub.add_client_error("start_job_run", service_error_code=code, service_message="nope")
        with pytest.raises(error, match=r"nope|busy"):
            runner.start(SPEC)
