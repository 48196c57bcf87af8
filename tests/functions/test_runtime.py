"""The runtime: built once per cold start from SNAPLEDGER_* settings, injectable for tests."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.emr_serverless import EmrServerlessRunner
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.clock import ManualClock, SystemClock
from snapledger.core.job_sizing import Capacity
from snapledger.errors import InvalidRequestError
from snapledger.local.clients import local_dynamodb_client
from snapledger.runtime import (
    Runtime,
    build_runtime,
    replaced,
    reset_runtime,
    runtime,
    runtime_override,
    use_runtime,
)
from snapledger.settings import (
    ENV_DYNAMODB_ENDPOINT,
    ENV_ROOT,
    ENV_TABLE,
    JobSettings,
    LedgerSettings,
)


@pytest.fixture(autouse=True)
def fresh_runtime():
    reset_runtime()
    yield
    reset_runtime()


def test_dynamodb_local_endpoint_and_a_file_root(tmp_path):
    # Given settings for the local runtime
    settings = LedgerSettings(
        table="ledger", root=tmp_path.as_uri(), dynamodb_endpoint="http://127.0.0.1:8123"
    )
    # When the runtime is built
    rt = build_runtime(settings)
    # Then the ledger talks to DynamoDB Local, the store is the directory, the clock is real
    assert isinstance(rt.ledger, DynamoLedger)
    assert rt.ledger.table_name == "ledger"
    assert rt.ledger.client.meta.endpoint_url == "http://127.0.0.1:8123"
    assert isinstance(rt.store, FileObjectStore)
    assert rt.store.uri == tmp_path.as_uri()
    assert isinstance(rt.clock, SystemClock)


def test_aws_settings_build_the_s3_store_and_the_regional_endpoint():
    rt = build_runtime(LedgerSettings(table="ledger", root="s3://snapshots-bucket/team"))
    assert isinstance(rt.store, S3ObjectStore)
    assert rt.store.uri == "s3://snapshots-bucket/team"
    assert rt.ledger.client.meta.endpoint_url.startswith("https://dynamodb.")


def test_the_ledger_client_leaves_parameter_validation_to_dynamodb(tmp_path):
    # Its requests are fixed shapes the tests send to DynamoDB Local; S3's keep botocore's.
    # (botocore wraps the serializer in a validator when it validates: the client's config
    # object does not show the setting.)
    aws = build_runtime(LedgerSettings(table="ledger", root="s3://snapshots-bucket/team"))
    local = build_runtime(
        LedgerSettings(table="ledger", root=tmp_path.as_uri(), dynamodb_endpoint="http://x:1")
    )

    def validates(client):
        return type(client._serializer).__name__ == "ParamValidationDecorator"

    assert not validates(aws.ledger.client)
    assert not validates(local.ledger.client)
    assert not validates(local_dynamodb_client("http://x:1"))
    assert validates(aws.store._client)


def test_built_once_from_the_environment_until_reset(monkeypatch, tmp_path):
    # Given the function's environment
    monkeypatch.setenv(ENV_TABLE, "ledger")
    monkeypatch.setenv(ENV_ROOT, tmp_path.as_uri())
    monkeypatch.delenv(ENV_DYNAMODB_ENDPOINT, raising=False)
    # When the runtime is asked for twice
    first, second = runtime(), runtime()
    # Then it was built once (warm invocations reuse clients and connections)
    assert first is second
    # And after a reset it is built again
    reset_runtime()
    assert runtime() is not first


def test_missing_settings_name_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_TABLE, raising=False)
    monkeypatch.setenv(ENV_ROOT, tmp_path.as_uri())
    with pytest.raises(InvalidRequestError, match=ENV_TABLE):
        runtime()


def test_an_injected_runtime_wins_until_reset(monkeypatch, tmp_path):
    # Given no settings at all, and a runtime of the test's own
    monkeypatch.delenv(ENV_TABLE, raising=False)
    built = build_runtime(LedgerSettings(table="injected", root=tmp_path.as_uri()))
    injected = replaced(built, store=FileObjectStore(tmp_path), clock=ManualClock())
    # When it is injected, it is what every caller gets
    use_runtime(injected)
    assert runtime() is injected
    # And once reset, the settings are needed again
    reset_runtime()
    with pytest.raises(InvalidRequestError):
        runtime()
    # And the context manager form resets on the way out
    with runtime_override(injected):
        assert runtime() is injected
    with pytest.raises(InvalidRequestError):
        runtime()


@pytest.mark.parametrize("capacity", [{"vcpu": 32, "memory_gb": 128, "disk_gb": 400}, None])
def test_a_job_starting_function_sizes_jobs_within_the_capacity_it_is_given(tmp_path, capacity):
    given = {f"emr_max_{k}": v for k, v in (capacity or {}).items()}
    settings = JobSettings(
        table="ledger",
        root=tmp_path.as_uri(),
        emr_application_id="app",
        emr_job_role_arn="arn:aws:iam::123456789012:role/job",
        job_entrypoint="s3://b/e.py",
        **given,
    )
    runner = build_runtime(settings).runner
    assert isinstance(runner, EmrServerlessRunner)
    assert runner.capacity == (Capacity(**capacity) if capacity else None)


def test_a_function_builds_only_the_collaborators_it_asks_for(tmp_path):
    # Given a deployed function's environment (a job runner, an S3 root, both queues)
    env = {
        **os.environ,
        ENV_TABLE: "ledger",
        ENV_ROOT: "s3://snapshots-bucket/team",
        "SNAPLEDGER_EMR_APPLICATION_ID": "app",
        "SNAPLEDGER_EMR_JOB_ROLE_ARN": "arn:aws:iam::123456789012:role/job",
        "SNAPLEDGER_JOB_ENTRYPOINT": "s3://code/entry.py",
        "SNAPLEDGER_GC_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/gc",
        "SNAPLEDGER_REGISTRATION_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/reg",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    script = (
        "import boto3, json, sys\n"
        "made = []\n"
        "real = boto3.client\n"
        "boto3.client = lambda service, **kw: made.append(service) or real(service, **kw)\n"
        "from snapledger.runtime import runtime\n"
        "rt = runtime()\n"
        "first = list(made)\n"
        "rt.ledger, rt.streams, rt.jobs\n"
        "print(json.dumps({'first': first, 'made': made, 'modules': sorted(sys.modules)}))\n"
    )
    # When it asks for its runtime, then for the ledger, the stream logs and the jobs
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    seen = json.loads(done.stdout)
    # Then runtime() built no client, and the three share one DynamoDB client
    assert seen["first"] == []
    assert seen["made"] == ["dynamodb"]
    # And the adapters it did not ask for were never loaded
    for module in (
        "snapledger.adapters.emr_serverless",
        "snapledger.adapters.sqs_gc_shards",
        "snapledger.adapters.sqs_registration_queue",
        "snapledger.adapters.object_store_s3",
        "snapledger.gc_settings",
    ):
        assert module not in seen["modules"]
    assert "snapledger.adapters.dynamodb_ledger" in seen["modules"]


def test_every_collaborator_is_built_from_the_settings_when_asked_for(monkeypatch):
    # Given every setting a function may have
    settings = JobSettings(
        table="ledger",
        root="s3://snapshots-bucket/team",
        emr_application_id="app",
        emr_job_role_arn="arn:aws:iam::123456789012:role/job",
        job_entrypoint="s3://code/entry.py",
        registration_queue_url="https://sqs.eu-west-1.amazonaws.com/1/reg",
    )
    monkeypatch.setenv("SNAPLEDGER_GC_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/1/gc")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    rt = build_runtime(settings)
    # When each field is asked for, Then it is the adapter the settings describe, built once
    built = {f.name: getattr(rt, f.name) for f in dataclasses.fields(rt)}
    assert {f.name: getattr(rt, f.name) for f in dataclasses.fields(rt)} == built
    assert all(built[name] is getattr(rt, name) for name in built)
    assert type(built["runner"]).__name__ == "EmrServerlessRunner"
    assert type(built["gc_shards"]).__name__ == "SqsShardQueue"
    assert type(built["registration_queue"]).__name__ == "SqsRegistrationQueue"
    assert built["holds"] is None and built["event_archive"] is None
    assert built["gc"].gc_queue_url == "https://sqs.eu-west-1.amazonaws.com/1/gc"
    # And the DynamoDB adapters share one client
    clients = {id(built[n].client) for n in ("ledger", "jobs", "lineages", "policies", "streams")}
    assert len(clients) == 1


def test_replaced_takes_a_composed_runtime_and_keeps_what_it_does_not_change(tmp_path):
    # Given a runtime composed from settings, nothing built yet
    built = build_runtime(LedgerSettings(table="ledger", root=tmp_path.as_uri()))
    clock = ManualClock()
    # When its clock is replaced
    changed = replaced(built, clock=clock)
    # Then it is a plain Runtime with that clock and the composed one's other collaborators
    assert type(changed) is Runtime
    assert changed.clock is clock
    assert changed.ledger is built.ledger and changed.store is built.store
    # And an unknown collaborator is refused, as dataclasses.replace refuses it
    with pytest.raises(TypeError):
        replaced(built, ledgr=None)
