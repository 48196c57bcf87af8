"""A job's final objects are created only if absent: an existing key fails the job with a
reason naming it, and the object there is left unchanged. Locally through the shared Spark
session's JVM; on S3 through the AWS SDK for Java v2 in a Spark driver (a subprocess: one
session per process) against moto's S3 server, which answers 412 to If-None-Match."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from jobs.create_only import CreateOnlyUnavailableError, ObjectExistsError, S3CreateOnly
from jobs.output import publish_files, write_descriptor
from jobs.storage import ObjectStore, StoredFile

REPO = Path(__file__).resolve().parents[2]
PREFIX = "snapshots/orders/0/00000000000000000300-01J00000000000000000000000/"
STAGED = ["_staging/job-1/part-a.parquet", "_staging/job-1/part-b.parquet"]
TAKEN = "someone else's bytes"
EXISTS = "exists: a snapshot's files are never replaced"


def stage(root: Path) -> None:
    for index, key in enumerate(STAGED):
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(f"staged {index}".encode())


@pytest.mark.spark
def test_publishing_creates_new_files_and_never_replaces_one(spark, tmp_path) -> None:
    stage(tmp_path)
    store = ObjectStore(spark, tmp_path.as_uri())
    fresh = PREFIX.replace("300", "301")
    assert publish_files(store, [StoredFile(k, 8) for k in STAGED], fresh) == [
        fresh + "part-00000.parquet",
        fresh + "part-00001.parquet",
    ]
    assert (tmp_path / fresh / "part-00001.parquet").read_bytes() == b"staged 1"

    taken = tmp_path / PREFIX / "part-00001.parquet"
    taken.parent.mkdir(parents=True)
    taken.write_text(TAKEN)
    with pytest.raises(ObjectExistsError) as refused:
        publish_files(store, [StoredFile(k, 8) for k in STAGED], PREFIX)
    assert str(refused.value).startswith(f"{store.uri(PREFIX)}part-00001.parquet {EXISTS}")
    assert taken.read_text() == TAKEN
    assert (tmp_path / PREFIX / "part-00000.parquet").read_bytes() == b"staged 0"


@pytest.mark.spark
def test_a_descriptor_is_written_once(spark, tmp_path) -> None:
    store = ObjectStore(spark, tmp_path.as_uri())
    key = PREFIX + "_manifest.json"
    write_descriptor(store, key, {"lsn": 300})
    with pytest.raises(ObjectExistsError, match=f"_manifest.json {EXISTS}"):
        write_descriptor(store, key, {"lsn": 999})
    assert json.loads((tmp_path / key).read_text()) == {"lsn": 300}


@pytest.mark.spark
def test_without_the_sdk_on_the_driver_a_job_refuses_to_write_to_s3(spark) -> None:
    """The shared session's classpath is pyspark's: no AWS SDK for Java v2."""
    with pytest.raises(CreateOnlyUnavailableError) as refused:
        S3CreateOnly(spark._jvm, "s3://bucket/root")
    assert "no AWS SDK for Java v2 S3 client with If-None-Match" in str(refused.value)
    assert "writes nothing" in str(refused.value)


@pytest.fixture(scope="module")
def sdk_jars() -> Path:
    """The SDK's jars (tools/install-aws-sdk-v2.sh: ~8 MB from Maven Central, once)."""
    default = REPO / ".local" / "aws-sdk-v2"
    folder = Path(os.environ.get("SNAPLEDGER_AWS_SDK_V2_DIR", default))
    installed = subprocess.run(
        [str(REPO / "tools" / "install-aws-sdk-v2.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    if installed.returncode != 0:
        pytest.fail(f"could not install the AWS SDK for Java v2 jars: {installed.stderr}")
    return folder


@pytest.fixture
def moto_s3() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.mark.spark
@pytest.mark.slow
def test_on_s3_each_final_object_is_a_put_with_if_none_match(sdk_jars, moto_s3) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    bucket = "snapledger-create-only"
    s3.create_bucket(Bucket=bucket)
    for index, key in enumerate(STAGED):
        s3.put_object(Bucket=bucket, Key=f"root/{key}", Body=f"staged {index}".encode())
    taken = f"root/{PREFIX}part-00001.parquet"
    s3.put_object(Bucket=bucket, Key=taken, Body=TAKEN.encode())
    # moto replaces an object when asked without If-None-Match: its 412 below is the header's
    s3.put_object(Bucket=bucket, Key="root/control", Body=b"1")
    s3.put_object(Bucket=bucket, Key="root/control", Body=b"2")

    outcome = run_driver(sdk_jars, moto_s3, f"s3://{bucket}/root", PREFIX)
    assert outcome["published_error"].startswith(
        f"s3://{bucket}/root/{PREFIX}part-00001.parquet {EXISTS}"
    )
    assert s3.get_object(Bucket=bucket, Key=taken)["Body"].read() == TAKEN.encode()
    first = s3.get_object(Bucket=bucket, Key=f"root/{PREFIX}part-00000.parquet")
    assert first["Body"].read() == b"staged 0"
    assert outcome["descriptor"] == "written"
    assert outcome["descriptor_again"].startswith(
        f"s3://{bucket}/root/{PREFIX}_manifest.json {EXISTS}"
    )
    manifest = s3.get_object(Bucket=bucket, Key=f"root/{PREFIX}_manifest.json")
    assert json.loads(manifest["Body"].read()) == {"attempt": "descriptor"}

    fresh = PREFIX.replace("300", "301")
    outcome = run_driver(sdk_jars, moto_s3, f"s3://{bucket}/root", fresh)
    assert outcome["published"] == [fresh + "part-00000.parquet", fresh + "part-00001.parquet"]
    second = s3.get_object(Bucket=bucket, Key=f"root/{fresh}part-00001.parquet")
    assert second["Body"].read() == b"staged 1"


def run_driver(jars: Path, endpoint: str, root: str, prefix: str) -> dict[str, str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env.pop("AWS_SESSION_TOKEN", None)
    argv = [sys.executable, str(Path(__file__).with_name("create_only_s3_driver.py"))]
    argv += [str(jars), root, ",".join(STAGED), prefix, prefix + "_manifest.json"]
    ran = subprocess.run(
        argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    return dict(json.loads(ran.stdout.strip().splitlines()[-1]))
