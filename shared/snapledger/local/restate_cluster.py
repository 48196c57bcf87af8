"""The real Restate 1.7.12 server on one machine: an S3 endpoint it writes its snapshots to
(moto's server mode, in its own process on a free loopback port, or an endpoint given, such
as ``snapledger local up --s3-port``'s), the server itself (its own ports and base dir), and
a Python service with keyed state (``restate_service.py`` under hypercorn) registered with
it. The Restate tests (tests/restate/) and ``make demo-restate`` run it.

This module runs the processes (start, stop, kill, restart with a wiped store); what it
talks to them through has a module each: the configuration (restate_config.py), the admin
and ingress HTTP APIs (restate_http.py), ``restatectl`` (restatectl.py) and the snapshot
bucket (restate_bucket.py); `RestateCluster` offers their calls as its own methods.

Every process is started in its own session and stopped by its own pid (SIGTERM, then
SIGKILL); each also gets SIGKILL if the process that started it dies without stopping it.
Install the binaries with tools/install-restate.sh (or `make setup`). Checkout only, as the
rest of ``snapledger.local`` (never in the Lambda package); restate-sdk and hypercorn are
only imported by the service's own process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from snapledger.local import processes
from snapledger.local.clients import ensure_bucket
from snapledger.local.dynamodb_local import free_port
from snapledger.local.restate_bucket import S3Object, SnapshotBucket
from snapledger.local.restate_config import (
    BUCKET,
    DEFAULT_BIN_DIR,
    NODE_NAME,
    PREFIX,
    RESTATE_VERSION,
    RestateHarnessError,
    fabric_url,
    server_command,
    server_toml,
    snapshots_toml,
)
from snapledger.local.restate_http import StoreClient, register_deployment
from snapledger.local.restatectl import CreatedSnapshot, Restatectl

SERVICE_APP = Path(__file__).with_name("restate_service.py")
T = TypeVar("T")


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
        self.snapshot_bucket = SnapshotBucket(self.s3_endpoint, bucket, prefix)
        self.store = StoreClient(self.ingress_url)
        self.ctl = Restatectl(self.bin_dir, self.fabric_url)

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
        return fabric_url(self.fabric_port)

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
        return self.snapshot_bucket.s3

    def config_toml(self) -> str:
        """The restate.toml the server runs with: its ports, and snapshots to moto's S3."""
        snapshots = snapshots_toml(
            destination=f"s3://{self.bucket}/{self.prefix}",
            endpoint=self.s3_endpoint,
            num_retained=self.num_retained,
            snapshot_interval_num_records=self.snapshot_interval_num_records,
        )
        return server_toml(
            partitions=self.partitions,
            fabric_port=self.fabric_port,
            admin_port=self.admin_port,
            ingress_port=self.ingress_port,
            snapshots=snapshots,
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
            self.timed(
                "register_service", lambda: register_deployment(self.admin_url, self.service_url)
            )
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
        command = server_command(self.bin_dir, self.config_path, self.base_dir)
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

    # --- the service's keys (restate_http.py) ----------------------------------------
    def put(self, key: str, value: str) -> None:
        self.store.put(key, value)

    def get(self, key: str) -> str | None:
        return self.store.get(key)

    def put_many(self, values: dict[str, str], *, workers: int = 8) -> None:
        self.store.put_many(values, workers=workers)

    def get_many(self, keys: Iterable[str], *, workers: int = 8) -> dict[str, str | None]:
        return self.store.get_many(keys, workers=workers)

    def wait_every_key(self, values: Mapping[str, str], *, within_s: float = 90) -> float:
        return self.store.wait_every_key(values, within_s=within_s)

    # --- snapshots (restatectl.py) and the bucket (restate_bucket.py) ----------------
    def restatectl(self, *args: str, timeout_s: float = 60) -> str:
        return self.ctl.run(*args, timeout_s=timeout_s)

    def create_snapshots(self, retry_s: float = 30) -> list[CreatedSnapshot]:
        return self.ctl.create_snapshots(self.partitions, retry_s=retry_s)

    def list_bucket(self, prefix: str | None = None) -> list[S3Object]:
        return self.snapshot_bucket.objects(prefix)

    def read_object(self, key: str, *, byte_range: str | None = None) -> bytes:
        return self.snapshot_bucket.read_object(key, byte_range=byte_range)

    def read_json(self, key: str) -> Any:
        return self.snapshot_bucket.read_json(key)
