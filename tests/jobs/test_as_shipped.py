"""The jobs as StartJobRun ships them: spark-submit of the uploaded artifacts, clean Python.

What CDK uploads (``JobCode`` in infra/constructs/emr.py): the entry point file as it is,
and ``stage_job_package`` (``jobs/`` and the ``snapledger`` modules it shares) zipped
the way the CDK CLI zips a directory asset.
What StartJobRun sends (``EmrServerlessRunner.start``, captured from a real boto3 client):
``entryPoint``, ``entryPointArguments`` and ``sparkSubmitParameters`` (``--py-files`` and
the interpreter). Here those run under ``spark-submit`` in local mode, S3 URIs replaced
by the local artifacts, ``spark.emr-serverless.driverEnv.*`` applied to the driver's
environment as EMR Serverless applies it, and the release's interpreter replaced by one of
the same minor version on this machine: a virtual environment of ``JOB_PYTHON`` itself when
it exists here (Debian, like Amazon Linux, installs python3.11 at /usr/bin/python3.11), else
of another Python 3.11 that uv finds (pyenv, the project's own), else of the interpreter
running the tests (the closest there is: the project requires 3.11+), and the test says so.

The environment holds pyspark and py4j (as locked) and the standard library only: no
PYTHONPATH, an empty HOME, no project package installed, so a module missing from the zip
fails here as it would on EMR. One bootstrap and one restore on a small changelog; the
restore must equal a full replay and the snapshot's manifest must be written.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from jobs_support import (
    Record,
    check_descriptor_files,
    check_manifest,
    oracle,
    pythons_older_than,
    read_state,
    write_changelog,
)

from infra import names
from infra.packaging import stage_job_package
from jobs.entrypoint import REQUIRED_PYTHON, WRONG_PYTHON_EXIT
from snapledger.adapters.emr_serverless import EmrServerlessRunner
from snapledger.emr_release import JOB_PYTHON
from snapledger.models.jobs import PartitionPlan
from snapledger.ports import JobRunSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STREAM = "orders"
PARTITIONS = (0, 1)
RECORDS_PER_PARTITION = 30
BOOTSTRAP_LSN = 14
# Where CDK's assets would be in S3; replaced by the local artifacts below.
ENTRYPOINT_URI = "s3://cdk-assets/0123abcd.py"
PY_FILES_URI = "s3://cdk-assets/4567cdef.zip"
RUN_ARN = "arn:aws:emr-serverless:us-east-1:123456789012:/applications/app-id/jobruns/run-1"
DRIVER_ENV = "spark.emr-serverless.driverEnv."
INSTALLED = "import importlib.metadata as m; print(*sorted(d.name for d in m.distributions()))"
# What EMR Serverless's service decides, not StartJobRun: here, a small local master,
# and a JVM that compiles with C1 only (a short run; half the CPU time of a cold job).
LOCAL_ONLY = (
    "--master",
    "local[2]",
    "--driver-java-options",
    "-XX:TieredStopAtLevel=1",
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.sql.shuffle.partitions=4",
)


def zip_like_cdk(directory: Path, out: Path) -> Path:
    """Zip ``directory`` as the CDK CLI zips a directory asset for upload (cdk-assets'
    ``zipDirectory``): every file below it, dot files too, no directory entries, in sorted
    order, named by its path relative to ``directory``, dated 1980-01-01, with its mode."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(path.relative_to(directory).as_posix(), (1980, 1, 1, 0, 0, 0))
            info.external_attr = (path.stat().st_mode & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return out


def uv_command() -> list[str]:
    """uv as ``make`` runs it: ``uv run`` names itself in $UV, else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build the clean environment: run the tests with `make test`")
    return [found]


def job_python_minor() -> str:
    return Path(JOB_PYTHON).name.removeprefix("python")


@dataclass(frozen=True)
class CleanPython:
    """A virtual environment with pyspark and the standard library."""

    python: Path
    spark_home: Path  # the installed pyspark: EMR's image sets SPARK_HOME to its Spark too


@pytest.fixture(scope="session")
def clean_python(tmp_path_factory: pytest.TempPathFactory) -> CleanPython:
    venv = tmp_path_factory.mktemp("emr-python") / "venv"
    uv = uv_command()
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    candidates = [JOB_PYTHON] if Path(JOB_PYTHON).is_file() else []
    candidates += [job_python_minor(), sys.executable]
    for interpreter in candidates:
        made = subprocess.run(
            [*uv, "venv", "--quiet", "--no-project", "--python", interpreter, str(venv)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode == 0:
            break
    else:
        pytest.fail(f"no interpreter for the clean environment: {made.stderr}")
    if interpreter == sys.executable:
        warnings.warn(
            f"no Python {job_python_minor()} here: the job runs on this test's interpreter "
            f"({sys.version.split()[0]}), the closest available",
            stacklevel=1,
        )
    python = venv / "bin" / "python"
    # Only the lock's jobs group (pyspark and py4j, as locked) and not the project: from the
    # cache `make setup` filled, or from PyPI when the cache does not hold them.
    install = [
        *uv,
        "sync",
        "--frozen",
        "--quiet",
        "--no-install-project",
        "--only-group",
        "jobs",
        "--python",
        str(python),
    ]
    env["UV_PROJECT_ENVIRONMENT"] = str(venv)
    synced = subprocess.run(
        [*install, "--offline"], env=env, cwd=names.REPO_ROOT, capture_output=True, check=False
    )
    if synced.returncode != 0:
        synced = subprocess.run(
            install, env=env, cwd=names.REPO_ROOT, capture_output=True, text=True, check=False
        )
        if synced.returncode != 0:
            pytest.fail(f"could not install the locked pyspark: {synced.stderr}")
    where = "import os, pyspark; print(os.path.dirname(pyspark.__file__))"
    spark_home = subprocess.run(
        [str(python), "-I", "-c", where], capture_output=True, text=True, check=True
    ).stdout.strip()
    return CleanPython(python, Path(spark_home))


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two objects CDK uploads, by the S3 URI StartJobRun names them with."""
    out = tmp_path_factory.mktemp("cdk-assets")
    # A file asset is uploaded as it is, alone: nothing beside it in the job's working dir.
    entrypoint = out / "entrypoint" / names.JOB_ENTRYPOINT_NAME
    entrypoint.parent.mkdir()
    shutil.copyfile(names.JOBS_DIR / names.JOB_ENTRYPOINT_NAME, entrypoint)
    py_files = zip_like_cdk(
        stage_job_package(names.JOBS_DIR, names.SHARED_PACKAGE_DIR, names.JOB_SHARED_MODULES),
        out / "jobs.zip",
    )
    return {ENTRYPOINT_URI: entrypoint, PY_FILES_URI: py_files}


def shipped_driver(spec: JobRunSpec) -> dict[str, Any]:
    """The ``sparkSubmit`` job driver the launcher sends to StartJobRun for ``spec``."""
    client = boto3.client("emr-serverless", region_name="us-east-1")
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.emr-serverless.StartJobRun",
        lambda params, **_: sent.append(params),
    )
    runner = EmrServerlessRunner(
        "app-id", "arn:aws:iam::123456789012:role/job", ENTRYPOINT_URI, PY_FILES_URI, client
    )
    with Stubber(client) as stub:
        stub.add_response(
            "start_job_run",
            {"applicationId": "app-id", "jobRunId": "run-1", "arn": RUN_ARN},
        )
        runner.start(spec)
    return dict(sent[0]["jobDriver"]["sparkSubmit"])


def spark_submit(
    driver: dict[str, Any],
    artifacts: dict[str, Path],
    spark_home: Path,
    python: str,
    home: Path,
) -> subprocess.CompletedProcess[str]:
    """Run ``driver`` with the Spark at ``spark_home`` as EMR Serverless would, ``python``
    standing in for the release's ``JOB_PYTHON``."""

    def local(value: str) -> str:
        if value in artifacts:
            return str(artifacts[value])
        return python if value == JOB_PYTHON else value

    java = shutil.which("java")
    assert java is not None, "spark-submit needs Java (the release runs Java 17)"
    env = {
        "PATH": os.pathsep.join([str(Path(java).resolve().parent), "/usr/bin", "/bin"]),
        "HOME": str(home),
        "SPARK_HOME": str(spark_home),
        "LANG": "C.UTF-8",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    options: list[str] = []
    tokens = iter(driver["sparkSubmitParameters"].split())
    for option in tokens:
        value = next(tokens)
        if option == "--conf" and value.startswith(DRIVER_ENV):
            key, _, setting = value.removeprefix(DRIVER_ENV).partition("=")
            env[key] = local(setting)  # EMR Serverless sets it in the driver's environment
        elif option == "--conf":
            key, _, setting = value.partition("=")
            options += [option, f"{key}={local(setting)}"]
        else:
            options += [option, local(value)]
    assert env.get("PYSPARK_PYTHON") == python, (
        "StartJobRun does not name the job's Python: the release's default would run it"
    )
    argv = [
        str(spark_home / "bin" / "spark-submit"),
        *LOCAL_ONLY,
        *options,
        local(driver["entryPoint"]),
        *driver["entryPointArguments"],
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=home)


def changelog(root: Path) -> dict[int, list[Record]]:
    """A small changelog per partition: puts, deletes and puts again over a few keys."""
    rng = random.Random(13)
    records: dict[int, list[Record]] = {}
    for partition in PARTITIONS:
        records[partition] = []
        for lsn in range(RECORDS_PER_PARTITION):
            op = rng.choice(["put", "put", "delete"])
            value = f"v{lsn}".encode() if op == "put" else None
            records[partition].append(Record(f"k{rng.randrange(8)}", value, lsn, op))
        write_changelog(root, STREAM, partition, records[partition], segment_rows=10)
    return records


def bootstrap_spec(root: Path) -> JobRunSpec:
    return JobRunSpec(
        job_id="boot-shipped",
        kind="bootstrap",
        stream=STREAM,
        root=root.as_uri(),
        partitions=[PartitionPlan(partition=p, target_lsn=BOOTSTRAP_LSN) for p in PARTITIONS],
    )


def run_shipped(
    spec: JobRunSpec, artifacts: dict[str, Path], clean: CleanPython, home: Path
) -> dict[str, Any]:
    python = str(clean.python)
    done = spark_submit(shipped_driver(spec), artifacts, clean.spark_home, python, home)
    # (the Python driver's own output, tracebacks too, comes through spark-submit's stdout)
    assert done.returncode == 0, (
        f"spark-submit failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    (line,) = [text for text in done.stdout.splitlines() if text.startswith("{")]
    return dict(json.loads(line))


def test_bootstrap_then_restore_run_as_startjobrun_ships_them(
    artifacts, clean_python, tmp_path
) -> None:
    # Given a Python with nothing installed but pyspark and what it needs
    listed = subprocess.run(
        [str(clean_python.python), "-I", "-c", INSTALLED],
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.stdout.split() == ["py4j", "pyspark"]
    # And the built zip: the package at its root, files only, as CDK uploads it
    with zipfile.ZipFile(artifacts[PY_FILES_URI]) as archive:
        entries = archive.namelist()
    assert "jobs/__init__.py" in entries and not any(e.endswith("/") for e in entries)
    # And a small changelog under a file:// root
    root = tmp_path / "store"
    records = changelog(root)
    home = tmp_path / "home"
    home.mkdir()
    # When a bootstrap is started as the launcher starts it
    boot = run_shipped(bootstrap_spec(root), artifacts, clean_python, home)
    # Then each partition has a snapshot, its manifest written last, equal to the replay
    snapshots = {}
    for result in boot["partitions"]:
        manifest = check_manifest(root, result["prefix"])
        assert (manifest.lsn, manifest.source.kind) == (BOOTSTRAP_LSN, "bootstrap")
        partition = result["partition"]
        assert read_state(root, result["prefix"]) == oracle(records[partition], BOOTSTRAP_LSN)
        snapshots[partition] = (manifest.snapshot_id, result["prefix"])
    assert sorted(snapshots) == list(PARTITIONS)
    # When those snapshots are restored to the end of the changelog
    last = RECORDS_PER_PARTITION - 1
    restore = JobRunSpec(
        job_id="restore-shipped",
        kind="restore",
        stream=STREAM,
        root=root.as_uri(),
        partitions=[
            PartitionPlan(
                partition=p,
                base_snapshot_id=snapshots[p][0],
                base_lsn=BOOTSTRAP_LSN,
                base_prefix=snapshots[p][1],
                target_lsn=last,
            )
            for p in PARTITIONS
        ],
    )
    restored = run_shipped(restore, artifacts, clean_python, home)
    # Then each restore is the full replay of its partition's changelog
    for result in restored["partitions"]:
        partition = result["partition"]
        assert result["lsn"] == last
        assert read_state(root, result["prefix"]) == oracle(records[partition], last)
        descriptor = check_descriptor_files(root, result["prefix"], "_restore.json")
        assert descriptor["base"] == {
            "snapshot_id": snapshots[partition][0],
            "lsn": BOOTSTRAP_LSN,
            "offsets": None,
        }


def test_under_an_older_python_the_shipped_job_stops_at_once_naming_the_one_it_needs(
    artifacts, clean_python, tmp_path
) -> None:
    older = pythons_older_than(REQUIRED_PYTHON)
    if not older:
        pytest.skip("no Python older than 3.11 here (tests/jobs/test_wrong_python.py checks it)")
    version, python = max(older.items(), key=lambda item: tuple(map(int, item[0].split("."))))
    # Given a release whose interpreter is older than the jobs need (EMR 7.x ran 3.9)
    root = tmp_path / "store"
    changelog(root)
    # When the launcher's job runs there
    done = spark_submit(
        shipped_driver(bootstrap_spec(root)), artifacts, clean_python.spark_home, python, tmp_path
    )
    # Then it fails before any Spark work, naming the Python it needs and where to set it
    assert done.returncode == WRONG_PYTHON_EXIT, done.stderr[-4000:]
    # (spark-submit passes the Python driver's stderr on through its stdout)
    output = done.stdout + done.stderr
    (line,) = [text for text in output.splitlines() if text.startswith("error:")]
    assert "need Python 3.11 or newer" in line and f"Python {version}." in line
    assert "spark.emr-serverless.driverEnv.PYSPARK_PYTHON" in line
    assert not (root / "snapshots").exists()
