"""The real Restate 1.7.12 server on one machine: an S3 endpoint it writes its snapshots to
(moto's server mode, in its own process on a free loopback port, or an endpoint given, such
as ``snapledger local up --s3-port``'s), the server itself (its own ports and base dir), and
a Python service with keyed state (``restate_service.py`` under hypercorn) registered with
it. The Restate tests (tests/restate/) and ``make demo-restate`` run it.

Every process is started in its own session and stopped by its own pid (SIGTERM, then
SIGKILL); each also gets SIGKILL if the process that started it dies without stopping it.
Install the binaries with tools/install-restate.sh (or `make setup`). Checkout only, as the
rest of ``snapledger.local`` (never in the Lambda package); restate-sdk and hypercorn are
only imported by the service's own process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3

from snapledger.layouts.restate_keys import RECOMMENDED_NUM_RETAINED
from snapledger.local import processes
from snapledger.local.clients import ensure_bucket
from snapledger.local.dynamodb_local import REPO_ROOT, free_port

RESTATE_VERSION = "1.7.12"
DEFAULT_BIN_DIR = REPO_ROOT / ".local" / "restate" / "bin"
SERVICE_APP = Path(__file__).with_name("restate_service.py")

BUCKET = "restate-snapshots"
PREFIX = "cluster-a"
CLUSTER_NAME = "snapledger-test"
NODE_NAME = "node-1"
REGION = "us-east-1"
ACCESS_KEY = "testing"
SECRET_KEY = "testing"  # noqa: S105 - moto accepts any key; not a secret
T = TypeVar("T")

# `restatectl snapshots create` prints one line per partition, e.g.
# "Snapshot created for partition 0: snap_1745q2jaMGMSzzJs9zPIBEd (log 0 @ LSN >= 3)"
_CREATED = re.compile(
    r"^Snapshot created for partition (?P<partition>\d+): (?P<snapshot_id>snap_\w+) "
    r"\(log (?P<log_id>\d+) @ LSN >= (?P<lsn>\d+)\)$"
)


class RestateHarnessError(RuntimeError):
    """The Restate cluster could not be set up or a step of it failed."""


def snapshots_toml(
    *,
    destination: str,
    endpoint: str,
    num_retained: int = RECOMMENDED_NUM_RETAINED,
    snapshot_interval_num_records: int | None = None,
    region: str = REGION,
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
) -> str:
    """restate.toml's ``[worker.snapshots]`` table for an S3-compatible endpoint over plain
    HTTP (moto's server, ``snapledger local up --s3-port``): what the cluster here runs with
    and what ``local up`` prints. ``num-retained`` is always set (Restate's default, 1,
    evicts a snapshot as soon as the next lands): by default to the recommended 255."""
    if not 1 <= num_retained <= RECOMMENDED_NUM_RETAINED:
        raise ValueError(
            f"num_retained {num_retained}: Restate keeps 1 to {RECOMMENDED_NUM_RETAINED} "
            f"snapshots per partition; give a number in that range ({RECOMMENDED_NUM_RETAINED} "
            "lets snapledger's policy decide, docs/restate.md#num-retained)"
        )
    lines = ["[worker.snapshots]", f'destination = "{destination}"']
    lines.append(f"num-retained = {num_retained}")
    if snapshot_interval_num_records is not None:
        lines.append(f"snapshot-interval-num-records = {snapshot_interval_num_records}")
    lines += [
        f'aws-endpoint-url = "{endpoint}"',
        "aws-allow-http = true",
        f'aws-region = "{region}"',
        f'aws-access-key-id = "{access_key}"',
        f'aws-secret-access-key = "{secret_key}"',
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CreatedSnapshot:
    """One line of `restatectl snapshots create`: the snapshot Restate just uploaded."""

    partition: int
    snapshot_id: str
    log_id: int
    archived_lsn: int  # the LSN the repository held before ("LSN >= n"), not the new one


@dataclass(frozen=True)
class S3Object:
    key: str
    size: int
    etag: str


class RestateCluster:
    """moto S3 + restate-server + the service; `start()`/`stop()` or a context manager.

    Snapshots go to ``s3://{bucket}/{prefix}`` at ``s3_endpoint``: moto's server started
    here unless an endpoint is given (then only the bucket is created, if missing).
    `timings` records how long each step took (seconds), for the report and for tuning.
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        bin_dir: Path | None = None,
        partitions: int = 4,
        num_retained: int = 3,
        snapshot_interval_num_records: int | None = None,
        bucket: str = BUCKET,
        prefix: str = PREFIX,
        s3_endpoint: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self._external_s3 = s3_endpoint
        self.bin_dir = Path(bin_dir or os.environ.get("SNAPLEDGER_RESTATE_BIN") or DEFAULT_BIN_DIR)
        self.work_dir = work_dir
        self.base_dir = work_dir / "restate-data"
        self.config_path = work_dir / "restate.toml"
        self.partitions = partitions
        self.num_retained = num_retained
        self.snapshot_interval_num_records = snapshot_interval_num_records
        self.s3_port = free_port()
        self.fabric_port = free_port()
        self.admin_port = free_port()
        self.ingress_port = free_port()
        self.service_port = free_port()
        self.timings: dict[str, float] = {}
        self.server_starts = 0
        self._moto: subprocess.Popen[bytes] | None = None
        self._server: subprocess.Popen[bytes] | None = None
        self._service: subprocess.Popen[bytes] | None = None
        self._s3: Any = None
        self._last_stderr = ""

    # --- addresses -------------------------------------------------------------------
    @property
    def s3_endpoint(self) -> str:
        return self._external_s3 or f"http://127.0.0.1:{self.s3_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def ingress_url(self) -> str:
        return f"http://127.0.0.1:{self.ingress_port}"

    @property
    def fabric_url(self) -> str:
        return f"http://127.0.0.1:{self.fabric_port}/"

    @property
    def service_url(self) -> str:
        return f"http://127.0.0.1:{self.service_port}"

    @property
    def partition_store_dir(self) -> Path:
        """The node's partition store (RocksDB); wiping it makes the node restore snapshots."""
        return self.base_dir / NODE_NAME / "db"

    @property
    def server_log(self) -> Path:
        return self.work_dir / f"restate-server.{self.server_starts}.log"

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = boto3.client(
                "s3",
                endpoint_url=self.s3_endpoint,
                region_name=REGION,
                aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=SECRET_KEY,
            )
        return self._s3

    # --- configuration ---------------------------------------------------------------
    def config_toml(self) -> str:
        """The restate.toml the server runs with: its ports, and snapshots to moto's S3."""
        snapshots = snapshots_toml(
            destination=f"s3://{self.bucket}/{self.prefix}",
            endpoint=self.s3_endpoint,
            num_retained=self.num_retained,
            snapshot_interval_num_records=self.snapshot_interval_num_records,
        )
        return (
            f'cluster-name = "{CLUSTER_NAME}"\n'
            f'node-name = "{NODE_NAME}"\n'
            f"default-num-partitions = {self.partitions}\n"
            f'bind-address = "127.0.0.1:{self.fabric_port}"\n'
            f'advertised-address = "{self.fabric_url}"\n'
            "disable-telemetry = true\n"
            'shutdown-timeout = "5s"\n'
            'rocksdb-total-memory-size = "512 MiB"\n'
            "\n[admin]\n"
            f'bind-address = "127.0.0.1:{self.admin_port}"\n'
            "disable-web-ui = true\n"
            "\n[ingress]\n"
            f'bind-address = "127.0.0.1:{self.ingress_port}"\n'
            f"\n{snapshots}"
        )

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> RestateCluster:
        for binary in ("restate-server", "restatectl"):
            if not (self.bin_dir / binary).is_file():
                raise RestateHarnessError(
                    f"Restate {RESTATE_VERSION} is not installed at {self.bin_dir / binary}: "
                    "run tools/install-restate.sh (or `make setup`)"
                )
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.timed("start_s3", self._start_s3)
            self.config_path.write_text(self.config_toml())
            self.timed("start_server", self.start_server)
            self.timed("start_service", self._start_service)
            self.timed("register_service", self._register_service)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in (self._service, self._server, self._moto):
            processes.stop(process)
        self._service = self._server = self._moto = None

    def __enter__(self) -> RestateCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def timed(self, step: str, action: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return action()
        finally:
            self.timings[step] = round(time.monotonic() - started, 3)

    def _start_s3(self) -> None:
        if self._external_s3 is None:
            log = self.work_dir / "moto.log"
            port = str(self.s3_port)
            command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", port]
            self._moto = processes.spawn(command, log)
            endpoint = self.s3_endpoint + "/"
            processes.wait_for(
                "moto's S3 server",
                lambda: processes.http_ok(endpoint),
                self._moto,
                log,
                timeout_s=30,
                error=RestateHarnessError,
            )
        ensure_bucket(self.s3, self.bucket)  # an endpoint given may hold it already

    def start_server(self, timeout_s: float = 60) -> None:
        """Start restate-server (again, after `kill_server`) and wait until it serves."""
        if self._server is not None and self._server.poll() is None:
            raise RestateHarnessError("restate-server is already running")
        self.server_starts += 1
        command = [
            str(self.bin_dir / "restate-server"),
            "--config-file",
            str(self.config_path),
            "--base-dir",
            str(self.base_dir),
            "--listen-mode",
            "tcp",
            "--no-logo",
            "--log-disable-ansi-codes",
            "true",
        ]
        self._server = processes.spawn(command, self.server_log, cwd=self.work_dir)
        processes.wait_for(
            "restate-server",
            lambda: (
                processes.http_ok(self.admin_url + "/health")
                and processes.http_ok(self.ingress_url + "/restate/health")
            ),
            self._server,
            self.server_log,
            timeout_s=timeout_s,
            error=RestateHarnessError,
        )

    def kill_server(self) -> None:
        """SIGKILL the server: no clean shutdown, as a crashed node."""
        processes.stop(self._server, kill=True)
        self._server = None

    def wipe_partition_store(self) -> None:
        if self._server is not None and self._server.poll() is None:
            raise RestateHarnessError("stop the server before wiping its partition store")
        shutil.rmtree(self.partition_store_dir)

    def restart_wiped(self) -> None:
        """Kill the server, wipe its partition store and start it again: it restores each
        partition from the snapshot its latest.json names and replays the log after it."""
        self.kill_server()
        self.wipe_partition_store()
        self.start_server()

    def wait_every_key(self, values: Mapping[str, str], *, within_s: float = 90) -> float:
        """Seconds until every key answers its value in ``values`` (a partition still
        restoring answers nothing, or times out, until it recovers); RestateHarnessError
        with the first wrong ones after ``within_s``."""
        started = time.monotonic()
        wrong: dict[str, Any] = {}
        while time.monotonic() < started + within_s:
            try:
                answered = self.get_many(values)
            except (RestateHarnessError, OSError, ValueError) as exc:  # not serving yet
                wrong = {"error": repr(exc)}
            else:
                wrong = {k: v for k, v in answered.items() if v != values[k]}
                if not wrong:
                    return time.monotonic() - started
            time.sleep(0.5)
        raise RestateHarnessError(f"keys still wrong after {within_s}s: {list(wrong.items())[:5]}")

    def _start_service(self) -> None:
        log = self.work_dir / "service.log"
        command = [
            sys.executable,
            "-m",
            "hypercorn",
            f"{SERVICE_APP}:app",
            "--bind",
            f"127.0.0.1:{self.service_port}",
        ]
        self._service = processes.spawn(command, log, cwd=self.work_dir)
        processes.wait_for(
            "the test service (hypercorn)",
            lambda: processes.http_ok(self.service_url + "/health"),
            self._service,
            log,
            timeout_s=30,
            error=RestateHarnessError,
        )

    def _register_service(self) -> None:
        body = {"uri": self.service_url, "use_http_11": True}
        answer = self._post(self.admin_url + "/deployments", body, retry_s=10)
        names = [service["name"] for service in answer["services"]]
        if names != ["Store"]:
            raise RestateHarnessError(f"registration answered services {names}, want ['Store']")

    # --- calls -----------------------------------------------------------------------
    def _post(self, url: str, body: Any = None, *, retry_s: float = 30) -> Any:
        """POST JSON (no body and no content-type when body is None); retry while the
        server is not serving yet (connection refused, 5xx), raise on anything else."""
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"content-type": "application/json"}
        deadline = time.monotonic() + retry_s
        while True:
            request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1 built here
                url, data=data, method="POST", headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                    raw = response.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as error:
                detail = error.read().decode(errors="replace")
                if error.code < 500 or time.monotonic() > deadline:
                    raise RestateHarnessError(f"POST {url}: {error.code} {detail}") from error
            except (urllib.error.URLError, OSError) as error:
                if time.monotonic() > deadline:
                    raise RestateHarnessError(f"POST {url}: {error}") from error
            time.sleep(0.2)

    def put(self, key: str, value: str) -> None:
        self._post(f"{self.ingress_url}/Store/{key}/put", value)

    def get(self, key: str) -> str | None:
        value = self._post(f"{self.ingress_url}/Store/{key}/get")
        return None if value is None else str(value)

    def put_many(self, values: dict[str, str], *, workers: int = 8) -> None:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda item: self.put(*item), values.items()))

    def get_many(self, keys: Iterable[str], *, workers: int = 8) -> dict[str, str | None]:
        keys = list(keys)
        with ThreadPoolExecutor(workers) as pool:
            return dict(zip(keys, pool.map(self.get, keys), strict=True))

    # --- snapshots and the bucket ----------------------------------------------------
    def restatectl(self, *args: str, timeout_s: float = 60) -> str:
        command = [str(self.bin_dir / "restatectl"), "--address", self.fabric_url, "--yes", *args]
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=timeout_s
        )
        if done.returncode != 0:
            raise RestateHarnessError(
                f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        self._last_stderr = done.stderr
        return done.stdout

    def create_snapshots(self, retry_s: float = 30) -> list[CreatedSnapshot]:
        """`restatectl snapshots create`: a snapshot of every partition, uploaded when it
        returns (latest.json already names it). Right after a (re)start the cluster
        controller may not know the partition leaders yet ("Can not find a suitable node to
        take snapshot of partition n", exit code 0): those partitions are asked again."""
        created: dict[int, CreatedSnapshot] = {}
        deadline = time.monotonic() + retry_s
        while True:
            missing = [str(p) for p in range(self.partitions) if p not in created]
            output = self.restatectl("snapshots", "create", *missing)
            for line in output.splitlines():
                match = _CREATED.match(line.strip())
                if match:
                    created[int(match["partition"])] = CreatedSnapshot(
                        partition=int(match["partition"]),
                        snapshot_id=match["snapshot_id"],
                        log_id=int(match["log_id"]),
                        archived_lsn=int(match["lsn"]),
                    )
            if len(created) == self.partitions:
                return [created[p] for p in range(self.partitions)]
            if time.monotonic() > deadline:
                raise RestateHarnessError(
                    f"no snapshot of partitions {missing} after {retry_s}s; restatectl said:\n"
                    f"{output}{self._last_stderr}"
                )
            time.sleep(0.25)

    def list_bucket(self, prefix: str | None = None) -> list[S3Object]:
        """The bucket's objects under ``prefix`` (default: the cluster's prefix)."""
        under = self.prefix + "/" if prefix is None else prefix
        objects: list[S3Object] = []
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=under)
        for page in pages:
            objects.extend(
                S3Object(key=item["Key"], size=item["Size"], etag=item["ETag"])
                for item in page.get("Contents", [])
            )
        return objects

    def read_object(self, key: str, *, byte_range: str | None = None) -> bytes:
        extra = {"Range": byte_range} if byte_range else {}
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key, **extra)["Body"].read())

    def read_json(self, key: str) -> Any:
        return json.loads(self.read_object(key))
