"""The Kafka 4.4.0 broker as a child process: one node that is both broker and controller
(KRaft mode, no ZooKeeper) on two free loopback ports, its log dirs under a folder given.

Installed by ``tools/install-kafka.sh`` (``make setup``) into ``.local/kafka/libs``; started
by the Kafka tests (tests/kafka/) and stopped on exit, also when the process that started it
dies first. ``start()`` formats the storage when the folder is new (``kafka-storage format``,
i.e. ``kafka.tools.StorageTool``), starts ``kafka.Kafka`` and waits until the broker answers
a metadata request. Checkout only, as the rest of ``snapledger.local``.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from snapledger.errors import SnapledgerError
from snapledger.local import processes
from snapledger.local.dynamodb_local import REPO_ROOT, free_port, require_checkout

KAFKA_VERSION = "4.4.0"
DEFAULT_INSTALL_DIR = REPO_ROOT / ".local" / "kafka"
INSTALL_SCRIPT = REPO_ROOT / "tools" / "install-kafka.sh"
NODE_ID = 1

#: One combined broker+controller node; topics and their internal ones replicated once.
#: The cleaner runs (Kafka Streams' changelogs are compacted topics) and consumer groups
#: start at once (no initial rebalance delay), so tests do not wait.
SINGLE_NODE_CONFIG: Mapping[str, str] = {
    "process.roles": "broker,controller",
    "node.id": str(NODE_ID),
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "min.insync.replicas": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.enable": "true",
    "auto.create.topics.enable": "false",
}


class ChildProcessContext(ABC):
    """``with`` starts a child process (``start()``) and stops it at the end (``stop()``),
    killing it at once when the block raised: the broker and the application's instances."""

    @abstractmethod
    def start(self) -> Self:
        """Start the process and return once it is ready."""

    @abstractmethod
    def stop(self, *, kill: bool = False) -> None:
        """Stop the process if it runs: cleanly, or at once with ``kill``."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(kill=exc_type is not None)


class KafkaBrokerError(SnapledgerError):
    """The Kafka broker could not be found or started."""


def cluster_id() -> str:
    """A new cluster id as ``kafka-storage random-uuid`` prints one: a UUID's 16 bytes in
    URL-safe base64 without padding, never starting with ``-`` (kafka-storage would read it
    as an option; Kafka's ``Uuid.randomUuid`` draws again too)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(
    log_dir: Path, broker_port: int, controller_port: int, extra: Mapping[str, str]
) -> str:
    """server.properties for one broker+controller node on loopback (a static one-voter
    quorum: the ports may change between starts of the same log dir)."""
    config = {
        **SINGLE_NODE_CONFIG,
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "log.dirs": str(log_dir),
        **extra,
    }
    return "".join(f"{key}={value}\n" for key, value in config.items())


def answers_metadata(bootstrap_servers: str) -> bool:
    """True once the broker at ``bootstrap_servers`` lists itself in a metadata response."""
    from confluent_kafka import KafkaException  # dev dependency; imported where used
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 0})
    try:
        return NODE_ID in admin.list_topics(timeout=1).brokers
    except KafkaException:
        return False


class KafkaBroker(ChildProcessContext):
    """A running Kafka broker; use as a context manager or call start()/stop().

    ``work_dir`` holds its log dirs (``data/``), ``server.properties`` and ``broker.log``;
    starting again on the same folder keeps its topics. ``config`` adds or overrides broker
    properties (e.g. ``log.cleaner.backoff.ms``).
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        install_dir: Path | None = None,
        config: Mapping[str, str] | None = None,
        heap: str = "512m",
    ) -> None:
        self.install_dir = Path(
            install_dir or os.environ.get("SNAPLEDGER_KAFKA_DIR") or DEFAULT_INSTALL_DIR
        )
        self.work_dir = work_dir
        self.log_dir = work_dir / "data"
        self.config_path = work_dir / "server.properties"
        self.log_path = work_dir / "broker.log"
        self.config = dict(config or {})
        self.heap = heap
        self.port = 0
        self.controller_port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self._process is None:
            raise KafkaBrokerError("the Kafka broker is not running: start() it first")
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return None if self._process is None else self._process.pid

    def _java_command(self, main_class: str, *args: str) -> list[str]:
        libs = self.install_dir / "libs"
        if not (libs / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file():
            require_checkout()  # from a wheel: neither the jars nor the script to get them
            raise KafkaBrokerError(
                f"the Kafka {KAFKA_VERSION} broker is not installed in {libs}: "
                f"run {INSTALL_SCRIPT} (or `make setup`)"
            )
        java = shutil.which("java")
        if java is None:
            raise KafkaBrokerError("the Kafka broker needs Java 17+ on PATH: install a JDK")
        return [java, f"-Xmx{self.heap}", "-cp", f"{libs}/*", main_class, *args]

    def start(self, timeout_s: float = 90.0) -> Self:
        if self._process is not None:
            raise KafkaBrokerError("the Kafka broker is already running")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port, self.controller_port = free_port(), free_port()
        self.config_path.write_text(
            server_properties(self.log_dir, self.port, self.controller_port, self.config),
            encoding="utf-8",
        )
        if not (self.log_dir / "meta.properties").is_file():
            self._format()
        self._process = processes.spawn(
            self._java_command("kafka.Kafka", str(self.config_path)), self.log_path
        )
        try:
            processes.wait_for(
                "the Kafka broker",
                lambda: answers_metadata(f"127.0.0.1:{self.port}"),
                self._process,
                self.log_path,
                timeout_s=timeout_s,
                error=KafkaBrokerError,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _format(self) -> None:
        command = self._java_command(
            "kafka.tools.StorageTool",
            "format",
            "--config",
            str(self.config_path),
            "--cluster-id",
            cluster_id(),
        )
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise KafkaBrokerError(
                f"formatting the Kafka storage in {self.log_dir} failed "
                f"(exit {done.returncode}): {(done.stdout + done.stderr)[-2000:]}"
            )

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL after 10 s; SIGKILL at once if ``kill``."""
        process, self._process = self._process, None
        processes.stop(process, kill=kill)
