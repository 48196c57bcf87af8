"""The Kafka Streams application of ``kafka/app`` (totals per customer) as a child process:
started with a state dir, an application id and a broker; waited for until RUNNING; its
machine-readable stdout lines parsed (``RESTORED``, ``STANDBY``, ``TASKS``, ``STATE``); every
key it serves read over its loopback ``GET /totals``; stopped with SIGTERM so it closes
cleanly and writes its stores' offsets.

Built by ``make setup`` (``mvn -f kafka/app/pom.xml package``) into
``kafka/app/target/kafka-streams-totals.jar`` with its dependencies in ``target/lib/``.
The application itself knows nothing of snapledger; this module only drives it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from snapledger.errors import SnapledgerError
from snapledger.local import processes
from snapledger.local.dynamodb_local import REPO_ROOT, require_checkout
from snapledger.local.kafka_broker import ChildProcessContext

DEFAULT_JAR = REPO_ROOT / "kafka" / "app" / "target" / "kafka-streams-totals.jar"
INPUT_TOPIC = "orders"
OUTPUT_TOPIC = "totals-output"
STORE = "totals"
#: How long a clean close may take before the process is killed (it commits, flushes
#: RocksDB, writes the offsets and leaves the group).
STOP_TIMEOUT_S = 60.0


class KafkaAppError(SnapledgerError):
    """The Kafka Streams application could not be started, queried or stopped."""


def changelog_topic(application_id: str, store: str = STORE) -> str:
    """The changelog Kafka Streams creates for a store: ``{application.id}-{store}-changelog``."""
    return f"{application_id}-{store}-changelog"


@dataclass(frozen=True)
class Restored:
    """One ``RESTORED`` line: a store partition's restore from its changelog, from
    ``start_offset`` to ``end_offset``, ``count`` records."""

    store: str
    topic: str
    partition: int
    count: int
    start_offset: int
    end_offset: int


class KafkaStreamsApp(ChildProcessContext):
    """One instance of the application; a context manager, or start()/stop().

    ``properties`` are Kafka Streams properties (``--set key=value``), e.g.
    ``{"commit.interval.ms": "100", "processing.guarantee": "exactly_once_v2"}``.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        application_id: str,
        state_dir: Path,
        log_path: Path,
        *,
        properties: Mapping[str, str] | None = None,
        input_topic: str = INPUT_TOPIC,
        output_topic: str = OUTPUT_TOPIC,
        jar: Path | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.application_id = application_id
        self.state_dir = state_dir
        self.log_path = log_path
        self.properties = dict(properties or {})
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.jar = Path(jar or os.environ.get("SNAPLEDGER_KAFKA_APP_JAR") or DEFAULT_JAR)
        self.http_port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    # --- the process --------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> Self:
        """Start the instance and wait until it is RUNNING (all its tasks restored)."""
        self.launch()
        return self.wait_running(timeout_s)

    def launch(self) -> None:
        """Start the process without waiting (``wait_running()`` waits): several instances
        launched before any is waited for join their group together, as a deployment's pods
        do. Launch from the thread that will outlive it: the child is killed when the thread
        that started it ends (``processes.die_with_parent``)."""
        if self._process is not None:
            raise KafkaAppError("this application instance is already running")
        java = shutil.which("java")
        if java is None:
            raise KafkaAppError("the Kafka Streams application needs Java 17+ on PATH")
        if not self.jar.is_file():
            require_checkout()
            raise KafkaAppError(
                f"the Kafka Streams application is not built at {self.jar}: run `make setup` "
                "(or `mvn -f kafka/app/pom.xml package`)"
            )
        command = [
            java,
            "-Xmx512m",
            "-jar",
            str(self.jar),
            "--bootstrap-servers",
            self.bootstrap_servers,
            "--application-id",
            self.application_id,
            "--state-dir",
            str(self.state_dir),
            "--input-topic",
            self.input_topic,
            "--output-topic",
            self.output_topic,
            "--http-port",
            "0",
        ]
        for key, value in self.properties.items():
            command += ["--set", f"{key}={value}"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._process = processes.spawn(command, self.log_path)

    def wait_running(self, timeout_s: float = 120.0) -> Self:
        """Wait until the launched instance is RUNNING; killed if it fails or times out."""
        if self._process is None:
            raise KafkaAppError("this application instance was not launched")
        try:
            processes.wait_for(
                f"the Kafka Streams application {self.application_id!r}",
                lambda: self._reached("RUNNING") or self._failed(),
                self._process,
                self.log_path,
                timeout_s=timeout_s,
                error=KafkaAppError,
            )
            if self._failed():
                raise KafkaAppError(
                    f"the Kafka Streams application {self.application_id!r} failed at start; "
                    f"log {self.log_path}:\n{processes.tail(self.log_path)}"
                )
            [port] = self._fields("HTTP")[-1:]
            self.http_port = int(port[0])
        except BaseException:
            self.stop(kill=True)
            raise
        return self

    def stop(self, *, kill: bool = False, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (the application closes: commits, writes its stores' offsets, leaves the
        group) and wait; SIGKILL if ``kill`` or when it has not exited in ``timeout_s``."""
        process, self._process = self._process, None
        self.http_port = None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise KafkaAppError(
                f"the Kafka Streams application {self.application_id!r} did not close in "
                f"{timeout_s}s and was killed; log {self.log_path}"
            ) from None

    def stopped_cleanly(self) -> bool:
        """True when the last run printed ``STOPPED clean`` (close() finished in time)."""
        return ["clean"] in self._fields("STOPPED")

    # --- what it printed ----------------------------------------------------------------

    def _lines(self) -> list[str]:
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_start)
                return log.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def _fields(self, kind: str) -> list[list[str]]:
        """The fields after ``kind`` of this run's lines that start with ``kind``."""
        prefix = kind + " "
        return [line[len(prefix) :].split(" ") for line in self._lines() if line.startswith(prefix)]

    def _reached(self, state: str) -> bool:
        return any(fields[0] == state for fields in self._fields("STATE"))

    def _failed(self) -> bool:
        return bool(self._fields("ERROR")) or self._reached("ERROR")

    def restored(self) -> list[Restored]:
        """This run's ``RESTORED`` lines; one whose state was at the changelog's end counts 0."""
        return [
            Restored(f[0], f[1], int(f[2]), int(f[3]), int(f[4]), int(f[5]))
            for f in self._fields("RESTORED")
        ]

    def restored_count(self) -> int:
        return sum(r.count for r in self.restored())

    def standby_loaded(self) -> int:
        """Records this run's standby and warm-up tasks loaded from changelogs (``STANDBY``
        lines): restoring too, though not an active task's restore (not in ``restored()``)."""
        return sum(int(f[3]) for f in self._fields("STANDBY"))

    def active_tasks(self) -> list[str]:
        """The active tasks (``{subtopology}_{partition}``) when it last turned RUNNING."""
        runs = self._fields("TASKS")
        return [task for task in runs[-1][0].split(",") if task] if runs else []

    # --- what it serves -----------------------------------------------------------------

    def totals(self, timeout_s: float = 30.0) -> dict[str, int]:
        """Every key this instance serves from its local ``totals`` stores (interactive
        queries over ``GET /totals``); retried while the stores are not queryable."""
        if self.http_port is None:
            raise KafkaAppError("the application is not running: start() it first")
        url = f"http://127.0.0.1:{self.http_port}/totals"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    served: dict[str, int] = json.loads(response.read())
                    return served
            except urllib.error.HTTPError as exc:
                if exc.code != 503 or time.monotonic() > deadline:
                    raise KafkaAppError(f"GET {url}: {exc.code} {exc.read()!r}") from exc
            time.sleep(0.2)

    def wait_for_totals(
        self, expected: Mapping[str, int], timeout_s: float = 60.0
    ) -> dict[str, int]:
        """Poll the served totals until they equal ``expected``; the last ones otherwise."""
        deadline = time.monotonic() + timeout_s
        served = self.totals()
        while served != expected and time.monotonic() < deadline:
            time.sleep(0.2)
            served = self.totals()
        return served


def start_together(apps: Sequence[KafkaStreamsApp], timeout_s: float = 120.0) -> None:
    """Launch every instance, then wait until each is RUNNING: they start at once, as a
    deployment's instances do (within the broker's ``group.initial.rebalance.delay.ms`` of
    each other they join the group's first rebalance together). All are killed if one fails."""
    try:
        for app in apps:
            app.launch()
        for app in apps:
            app.wait_running(timeout_s)
    except BaseException:
        for app in apps:
            app.stop(kill=True)
        raise
