"""A Fluss 0.7.0 cluster as child processes: a standalone ZooKeeper (the one the shaded
fluss-server jar bundles), a CoordinatorServer and one TabletServer, each on a free loopback
port, their files under a folder given.

Installed by ``tools/install-fluss.sh`` (``make setup``) into ``.local/fluss/lib``; started by
the Fluss tests (tests/fluss/) once per session and stopped on exit, also when the process
that started it dies first. ``remote.data.dir`` (where Fluss uploads its KV snapshots) is a
local directory, ``{work_dir}/remote``: Fluss's S3 file system plugin is not served from Maven
Central here, and a local directory is what snapledger's ``file://`` object store can host
(docs/fluss.md).

Every server is stopped with SIGTERM: after a SIGKILL a restarted tablet server waits for its
old ZooKeeper session to expire (about 25 s) before it registers again.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Self

from snapledger.errors import SnapledgerError
from snapledger.local import processes
from snapledger.local.dynamodb_local import REPO_ROOT, free_port, require_checkout
from snapledger.local.kafka_broker import ChildProcessContext

FLUSS_VERSION = "0.7.0"
SLF4J_VERSION = "2.0.17"
DEFAULT_INSTALL_DIR = REPO_ROOT / ".local" / "fluss"
INSTALL_SCRIPT = REPO_ROOT / "tools" / "install-fluss.sh"
ZOOKEEPER_MAIN = (
    "com.alibaba.fluss.shaded.zookeeper3.org.apache.zookeeper.server.ZooKeeperServerMain"
)
COORDINATOR_MAIN = "com.alibaba.fluss.server.coordinator.CoordinatorServer"
TABLET_MAIN = "com.alibaba.fluss.server.tablet.TabletServer"
TABLET_SERVER_ID = 0
#: The bounds of the two snapshot settings this module takes (docs/limits.md).
MIN_SNAPSHOT_INTERVAL_S = 1
MAX_SNAPSHOT_INTERVAL_S = 86_400
MAX_NUM_RETAINED = 1_000
#: Fluss's RocksDB may load a JNI library from /tmp; the JVM needs this opening on Java 17.
JVM_OPTIONS = ("-XX:+UseSerialGC", "--add-opens=java.base/java.nio=ALL-UNNAMED")

#: Small and quick: one replica, a small write buffer (several SSTs per bucket, so snapshots
#: are incremental and share files), few network threads.
SINGLE_NODE_CONFIG: Mapping[str, str] = {
    "default.replication.factor": "1",
    "netty.server.num-network-threads": "1",
    "netty.server.num-worker-threads": "2",
}
TABLET_CONFIG: Mapping[str, str] = {
    "kv.rocksdb.writebuffer.size": "4mb",
    "server.buffer.memory-size": "64mb",
}


class FlussClusterError(SnapledgerError):
    """The Fluss cluster could not be found, configured or started."""


def check_snapshot_settings(snapshot_interval_s: int, num_retained: int) -> None:
    """One line naming the setting that is out of its bound."""
    if not MIN_SNAPSHOT_INTERVAL_S <= snapshot_interval_s <= MAX_SNAPSHOT_INTERVAL_S:
        raise FlussClusterError(
            f"snapshot_interval_s must be in [{MIN_SNAPSHOT_INTERVAL_S}, "
            f"{MAX_SNAPSHOT_INTERVAL_S}] seconds, got {snapshot_interval_s}"
        )
    if not 1 <= num_retained <= MAX_NUM_RETAINED:
        raise FlussClusterError(
            f"num_retained must be in [1, {MAX_NUM_RETAINED}], got {num_retained}"
        )


def yaml_config(config: Mapping[str, str]) -> str:
    """server.yaml's flat ``key: value`` lines. Fluss reads them without YAML's quoting (a
    quoted value keeps its quotes), so a value may hold no line break and no `` #``."""
    for key, value in config.items():
        if "\n" in value or " #" in value or not value.strip():
            raise FlussClusterError(
                f"the Fluss setting {key} must be one non-empty line without ' #', got {value!r}"
            )
    return "".join(f"{key}: {value}\n" for key, value in config.items())


def zookeeper_answers(port: int, command: bytes = b"ruok") -> str:
    """ZooKeeper's reply to a four-letter command (``ruok`` -> ``imok``), "" if none."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(command)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class FlussCluster(ChildProcessContext):
    """A running Fluss cluster; use as a context manager or call start()/stop().

    ``work_dir`` holds ``zk/``, ``coordinator/`` and ``tablet-0/`` (each with its
    ``server.yaml`` and log) and ``remote/`` (``remote.data.dir``, unless ``remote_dir`` names
    another folder: a local registry's root, whose router then sees the snapshots arrive).
    ``snapshot_interval_s`` is ``kv.snapshot.interval``; ``num_retained`` is
    ``kv.snapshot.num-retained``, set on the coordinator, which does the retention. ``config``
    adds or overrides server settings.
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        install_dir: Path | None = None,
        snapshot_interval_s: int = 2,
        num_retained: int = 3,
        config: Mapping[str, str] | None = None,
        heap: str = "384m",
        remote_dir: Path | None = None,
    ) -> None:
        check_snapshot_settings(snapshot_interval_s, num_retained)
        self.install_dir = Path(
            install_dir or os.environ.get("SNAPLEDGER_FLUSS_DIR") or DEFAULT_INSTALL_DIR
        )
        self.work_dir = work_dir.resolve()
        self.remote_dir = (remote_dir or self.work_dir / "remote").resolve()
        self.tablet_data_dir = self.work_dir / "tablet-0" / "data"
        self.snapshot_interval_s = snapshot_interval_s
        self.num_retained = num_retained
        self.config = dict(config or {})
        self.heap = heap
        self.zookeeper_port = self.coordinator_port = self.tablet_port = 0
        self._zookeeper: subprocess.Popen[bytes] | None = None
        self._coordinator: subprocess.Popen[bytes] | None = None
        self._tablet: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self._coordinator is None:
            raise FlussClusterError("the Fluss cluster is not running: start() it first")
        return f"127.0.0.1:{self.coordinator_port}"

    @property
    def zookeeper_address(self) -> str:
        return f"127.0.0.1:{self.zookeeper_port}"

    def log_path(self, server: str) -> Path:
        """``zookeeper``, ``coordinator`` or ``tablet-0``'s log."""
        return self.work_dir / ("zk" if server == "zookeeper" else server) / "server.log"

    def pids(self) -> dict[str, int]:
        running = {
            "zookeeper": self._zookeeper,
            "coordinator": self._coordinator,
            "tablet-0": self._tablet,
        }
        return {name: p.pid for name, p in running.items() if p is not None and p.poll() is None}

    def _classpath(self) -> str:
        lib = self.install_dir / "lib"
        server_jar = lib / f"fluss-server-{FLUSS_VERSION}.jar"
        if not server_jar.is_file():
            require_checkout()  # from a wheel: neither the jars nor the script to get them
            raise FlussClusterError(
                f"the Fluss {FLUSS_VERSION} server is not installed in {lib}: "
                f"run {INSTALL_SCRIPT} (or `make setup`)"
            )
        # SLF4J 2 before the server jar, or its bundled 1.7 API wins and nothing is logged.
        first = [lib / f"slf4j-api-{SLF4J_VERSION}.jar", lib / f"slf4j-simple-{SLF4J_VERSION}.jar"]
        rest = sorted(p for p in lib.glob("*.jar") if p not in first)
        return os.pathsep.join(str(p) for p in [*first, *rest])

    def _java(self, heap: str, main_class: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise FlussClusterError("the Fluss servers need Java 17+ on PATH: install a JDK")
        return [java, f"-Xmx{heap}", *JVM_OPTIONS, "-cp", self._classpath(), main_class, *args]

    def start(self, timeout_s: float = 120.0) -> Self:
        if self._zookeeper is not None:
            raise FlussClusterError("the Fluss cluster is already running")
        self._classpath()  # fail before any process starts when it is not installed
        self.remote_dir.mkdir(parents=True, exist_ok=True)
        self.zookeeper_port, self.coordinator_port = free_port(), free_port()
        try:
            self._start_zookeeper(timeout_s)
            self._start_coordinator(timeout_s)
            self.start_tablet_server(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_zookeeper(self, timeout_s: float) -> None:
        folder = self.work_dir / "zk"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        cfg = folder / "zoo.cfg"
        cfg.write_text(
            f"dataDir={folder / 'data'}\nclientPort={self.zookeeper_port}\n"
            "clientPortAddress=127.0.0.1\ntickTime=2000\nadmin.enableServer=false\n"
            "4lw.commands.whitelist=*\n",
            encoding="utf-8",
        )
        self._zookeeper = self._spawn(
            "zookeeper",
            self._java("128m", ZOOKEEPER_MAIN, str(cfg)),
            lambda: zookeeper_answers(self.zookeeper_port) == "imok",
            timeout_s,
        )

    def _spawn(
        self, server: str, command: list[str], ready: Callable[[], bool], timeout_s: float
    ) -> subprocess.Popen[bytes]:
        """Start one server, its output appended to its log, and wait until ``ready()``."""
        log = self.log_path(server)
        process = processes.spawn(command, log)
        try:
            processes.wait_for(
                f"the Fluss {server}",
                ready,
                process,
                log,
                timeout_s=timeout_s,
                error=FlussClusterError,
            )
        except BaseException:
            processes.stop(process)
            raise
        return process

    def _server_config(self, port: int, extra: Mapping[str, str]) -> dict[str, str]:
        return {
            "zookeeper.address": self.zookeeper_address,
            "bind.listeners": f"FLUSS://127.0.0.1:{port}",
            "remote.data.dir": str(self.remote_dir),
            **SINGLE_NODE_CONFIG,
            "kv.snapshot.interval": f"{self.snapshot_interval_s}s",
            "kv.snapshot.num-retained": str(self.num_retained),
            **extra,
            **self.config,
        }

    def _start_coordinator(self, timeout_s: float) -> None:
        folder = self.work_dir / "coordinator"
        folder.mkdir(parents=True, exist_ok=True)
        config = self._server_config(self.coordinator_port, {})
        (folder / "server.yaml").write_text(yaml_config(config), encoding="utf-8")
        self._coordinator = self._spawn(
            "coordinator",
            self._java(self.heap, COORDINATOR_MAIN, "--configDir", str(folder)),
            lambda: port_open(self.coordinator_port),
            timeout_s,
        )

    def tablet_registered(self) -> bool:
        """True while ZooKeeper holds the tablet server's registration (an ephemeral node)."""
        dump = zookeeper_answers(self.zookeeper_port, b"dump")
        return f"/fluss/tabletservers/ids/{TABLET_SERVER_ID}" in dump

    def start_tablet_server(self, timeout_s: float = 120.0) -> None:
        """Start the tablet server (again: on the same ``data.dir``) and wait until it has
        registered in ZooKeeper and its port answers."""
        if self._tablet is not None and self._tablet.poll() is None:
            raise FlussClusterError("the Fluss tablet server is already running")
        folder = self.work_dir / "tablet-0"
        self.tablet_data_dir.mkdir(parents=True, exist_ok=True)
        self.tablet_port = free_port()
        config = self._server_config(
            self.tablet_port,
            {
                "tablet-server.id": str(TABLET_SERVER_ID),
                "data.dir": str(self.tablet_data_dir),
                **TABLET_CONFIG,
            },
        )
        (folder / "server.yaml").write_text(yaml_config(config), encoding="utf-8")
        self._tablet = self._spawn(
            "tablet-0",
            self._java(self.heap, TABLET_MAIN, "--configDir", str(folder)),
            lambda: port_open(self.tablet_port) and self.tablet_registered(),
            timeout_s,
        )

    def stop_tablet_server(self) -> None:
        """SIGTERM the tablet server and wait until it has left ZooKeeper (a clean stop)."""
        process, self._tablet = self._tablet, None
        processes.stop(process)

    def wipe_tablet_kv(self) -> list[Path]:
        """Delete the stopped tablet server's KV (RocksDB) directories, keeping its logs: what
        a restart then restores from the latest snapshot. Returns the folders deleted."""
        if self._tablet is not None and self._tablet.poll() is None:
            raise FlussClusterError("stop the tablet server before wiping its KV directories")
        wiped = sorted(p for p in self.tablet_data_dir.glob("*/*-*/kv-*") if p.is_dir())
        for folder in wiped:
            shutil.rmtree(folder)
        return wiped

    def stop(self, *, kill: bool = False) -> None:
        """The tablet server, the coordinator, then ZooKeeper, each by SIGTERM (SIGKILL after
        10 s); SIGKILL at once if ``kill``."""
        for name in ("_tablet", "_coordinator", "_zookeeper"):
            process = getattr(self, name)
            setattr(self, name, None)
            processes.stop(process, kill=kill)
