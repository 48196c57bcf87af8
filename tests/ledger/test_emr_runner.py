"""The EMR Serverless runner against moto: client token, arguments, Python, status, errors."""

from __future__ import annotations

from dataclasses import replace

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from snapledger.adapters.emr_serverless import EmrServerlessRunner, spark_submit_parameters
from snapledger.core.job_sizing import GIB, MIB, Capacity, PartitionInput, size_job
from snapledger.core.jobs import recorded_resources
from snapledger.emr_release import JOB_PYTHON
from snapledger.errors import InvalidRequestError, JobStartError, StoreUnavailableError
from snapledger.models.jobs import PartitionPlan
from snapledger.ports import JobRunSpec
from snapledger.settings import JobSettings, emr_capacity, settings_from_env

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


RUN_ARN = "arn:aws:emr-serverless:us-east-1:123456789012:/applications/app/jobruns/run-1"


def sent_parameters(runner: EmrServerlessRunner, spec: JobRunSpec) -> str:
    sent = []
    runner.client.meta.events.register(
        "provide-client-params.emr-serverless.StartJobRun",
        lambda params, **_: sent.append(params),
    )
    with Stubber(runner.client) as stub:
        stub.add_response(
            "start_job_run", {"applicationId": "app", "jobRunId": "r", "arn": RUN_ARN}
        )
        runner.start(spec)
    return sent[0]["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"]


def sized_runner(capacity: Capacity | None) -> EmrServerlessRunner:
    client = boto3.client("emr-serverless", region_name="us-east-1")
    role = "arn:aws:iam::123456789012:role/job"
    return EmrServerlessRunner("app", role, "s3://b/e.py", "", client, capacity=capacity)


TWO = JobRunSpec(
    job_id="restore-two",
    kind="restore",
    stream="orders",
    root="s3://bucket",
    partitions=[PartitionPlan(partition=p, target_lsn=99) for p in (1, 0)],
    inputs={0: PartitionInput(GIB, 0), 1: PartitionInput(9 * GIB, GIB)},
)


def sized(runner: EmrServerlessRunner, spec: JobRunSpec) -> JobRunSpec:
    """``spec`` with the size the runner gives it, as the launch passes it (once)."""
    return replace(spec, size=runner.size(spec))


def test_start_job_run_carries_the_size_of_what_the_job_reads():
    capacity = Capacity(vcpu=16, memory_gb=64, disk_gb=200)
    runner = sized_runner(capacity)
    parameters = sent_parameters(runner, sized(runner, TWO))
    size = size_job("restore", [TWO.inputs[1], TWO.inputs[0]], capacity)
    assert parameters == spark_submit_parameters("", size)
    assert parameters.startswith(spark_submit_parameters("") + " --conf spark.driver.cores=1 ")
    # 11 GiB over 2 partitions: the merge's 2 cores; the 10 GiB partition wants the most
    # memory a 2 vCPU worker has (16 GB); its 11 GiB share of disk is under the least
    assert parameters.endswith(
        " --conf spark.executor.cores=2 --conf spark.executor.memory=14894m"
        " --conf spark.executor.memoryOverhead=1490m"
        " --conf spark.emr-serverless.executor.disk=20G --conf spark.executor.instances=1"
        " --conf spark.dynamicAllocation.initialExecutors=1"
        " --conf spark.dynamicAllocation.maxExecutors=1 --conf spark.sql.shuffle.partitions=2"
    )


def test_the_resources_a_job_records_are_the_workers_start_asks_for():
    capacity = Capacity(vcpu=16, memory_gb=64, disk_gb=200)
    runner = sized_runner(capacity)
    spec = sized(runner, TWO)
    parameters = sent_parameters(runner, spec)
    assert spec.size is not None
    resources = recorded_resources(spec.size)
    for conf in (
        f"spark.driver.cores={resources.driver.vcpu}",
        f"spark.executor.cores={resources.executor.vcpu}",
        f"spark.emr-serverless.executor.disk={resources.executor.disk_gb}G",
        f"spark.executor.instances={resources.executors}",
        f"spark.sql.shuffle.partitions={resources.shuffle_partitions}",
    ):
        assert f"--conf {conf}" in parameters
    # the 10 GiB partition's worker: 2 vCPU and the most memory one has
    assert resources.executor.model_dump() == {"vcpu": 2, "memory_gb": 16, "disk_gb": 20}
    assert sized_runner(None).size(TWO) is None


def test_start_uses_the_size_it_is_given_and_sizes_nothing_again(monkeypatch):
    runner = sized_runner(Capacity(vcpu=16, memory_gb=64, disk_gb=200))
    spec = sized(runner, TWO)
    monkeypatch.setattr(runner, "size", lambda spec: pytest.fail("sized a second time"))
    assert spec.size is not None
    assert sent_parameters(runner, spec) == spark_submit_parameters("", spec.size)
    # and a spec given no size starts on the application's defaults, whatever it reads
    assert sent_parameters(runner, TWO) == spark_submit_parameters("")


def test_without_the_capacity_or_an_input_the_application_defaults_stay():
    unsized = spark_submit_parameters("")
    assert sent_parameters(sized_runner(None), sized(sized_runner(None), TWO)) == unsized
    partial = JobRunSpec(**{**TWO.__dict__, "inputs": {0: PartitionInput(40 * MIB, 0)}})
    with_capacity = sized_runner(Capacity(16, 64, 200))
    assert sent_parameters(with_capacity, sized(with_capacity, partial)) == unsized


JOB_ENV = {
    "SNAPLEDGER_TABLE": "ledger",
    "SNAPLEDGER_ROOT": "s3://bucket",
    "SNAPLEDGER_EMR_APPLICATION_ID": "app",
    "SNAPLEDGER_EMR_JOB_ROLE_ARN": "arn:aws:iam::123456789012:role/job",
    "SNAPLEDGER_JOB_ENTRYPOINT": "s3://b/e.py",
}
CAPACITY_ENV = {
    "SNAPLEDGER_EMR_MAX_VCPU": "16",
    "SNAPLEDGER_EMR_MAX_MEMORY_GB": "64",
    "SNAPLEDGER_EMR_MAX_DISK_GB": "200",
}


def test_the_capacity_comes_from_the_environment_whole_or_not_at_all():
    settings = settings_from_env(JobSettings, JOB_ENV | CAPACITY_ENV)
    assert emr_capacity(settings) == Capacity(16, 64, 200)
    assert emr_capacity(settings_from_env(JobSettings, JOB_ENV)) is None
    partial = JOB_ENV | {"SNAPLEDGER_EMR_MAX_VCPU": "16"}
    with pytest.raises(InvalidRequestError, match="set all of EMR_MAX_VCPU"):
        settings_from_env(JobSettings, partial)
    tiny = JOB_ENV | CAPACITY_ENV | {"SNAPLEDGER_EMR_MAX_DISK_GB": "30"}
    with pytest.raises(InvalidRequestError, match="needs at least 2 vCPU, 4 GB memory and 40"):
        settings_from_env(JobSettings, tiny)
