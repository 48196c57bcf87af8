"""The Fluss client program of ``fluss/client`` (``fluss-probe.jar``) driven from Python: each
call runs one command against a table and parses the JSON lines it prints; ``start_writer``
starts a writer that waits, after writing, for a checkpoint that never comes (the test kills
it). Built by ``make setup`` (``mvn -f fluss/client/pom.xml package``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.errors import SnapledgerError
from snapledger.local.dynamodb_local import REPO_ROOT, require_checkout

DEFAULT_JAR = REPO_ROOT / "fluss" / "client" / "target" / "fluss-probe.jar"
#: A command's bound: table creation or an undo over a long changelog takes seconds.
COMMAND_TIMEOUT_S = 300.0
#: The client program's commands that only read, and how often one is asked (a second
#: apart) while the cluster is not serving the table yet: 30 attempts, about a minute with
#: the JVM's starts, as long as a restarted tablet server took to serve on a loaded machine.
READ_ONLY, READ_ATTEMPTS, RETRY_PAUSE_S = frozenset({"offsets", "snapshots", "read"}), 30, 1.0
#: The commands asked again so: the reads, and the writes that leave the same table however
#: often they are applied (an upsert of the same rows at the same version, a delete of the
#: same ids); never ``create``, ``write`` or ``undo``. A repeated write adds changelog
#: records, not state. A dropped connection to the tablet server failed an upsert in CI.
REPEATABLE = READ_ONLY | {"upsert", "delete"}
#: What the client prints when the cluster is not serving a bucket yet: its connection to a
#: server dropped ("Cannot send request to server ... because it is disconnected"), or a
#: restarted tablet server has not taken the bucket's leadership back ("Leader not found
#: after retry 5 times", with NETWORK_EXCEPTION lookups before it). Both seen in CI.
NOT_SERVING_YET = ("DisconnectException", "Leader not found after retry")


class FlussProbeError(SnapledgerError):
    """The client program is missing or a command of it failed."""


@dataclass(frozen=True)
class Row:
    id: int
    name: str
    v: int
    payload_bytes: int


@dataclass(frozen=True)
class BucketSnapshot:
    """A bucket's latest KV snapshot as the coordinator lists it (``snapshot_id`` None before
    the first): its changelog offset and its files' absolute paths."""

    bucket: int
    snapshot_id: int | None
    log_offset: int | None
    files: tuple[str, ...]


class FlussProbe:
    """One table of a Fluss cluster (``db.table``) seen through the client program."""

    def __init__(self, bootstrap_servers: str, table: str, *, jar: Path = DEFAULT_JAR) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.table = table
        self.jar = jar

    def _command(self, command: str, *options: str) -> list[str]:
        if not self.jar.is_file():
            require_checkout()
            raise FlussProbeError(
                f"the Fluss client program is not built ({self.jar}): "
                "run `mvn -f fluss/client/pom.xml package` (or `make setup`)"
            )
        java = shutil.which("java")
        if java is None:
            raise FlussProbeError("the Fluss client program needs Java 17+ on PATH")
        return [
            java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", str(self.jar),
            command, "--bootstrap", self.bootstrap_servers, "--table", self.table, *options,
        ]  # fmt: skip

    def run(self, command: str, *options: str) -> list[dict[str, Any]]:
        for attempt in range(1, READ_ATTEMPTS + 1):
            done = subprocess.run(
                self._command(command, *options),
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
            # A repeatable command the cluster could not serve yet is asked again; another never
            # is (it may have been applied, and applying it again would change the table).
            transient = done.returncode != 0 and any(m in done.stderr for m in NOT_SERVING_YET)
            if not (transient and command in REPEATABLE and attempt < READ_ATTEMPTS):
                break
            time.sleep(RETRY_PAUSE_S)
        if done.returncode != 0:
            raise FlussProbeError(
                f"fluss-probe {command} failed (exit {done.returncode}): {done.stderr[-3000:]}"
            )
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    def create(self, buckets: int) -> int:
        """Create the table (and its database); its table id."""
        [created] = self.run("create", "--buckets", str(buckets))
        return int(created["table_id"])

    def upsert(self, start: int, stop: int, version: int, *, payload_bytes: int = 100) -> int:
        [done] = self.run(
            "upsert",
            *("--from", str(start), "--to", str(stop), "--version", str(version)),
            *("--payload-bytes", str(payload_bytes)),
        )
        return int(done["upserted"])

    def drop(self) -> None:
        """Drop the table (its log, KV and snapshots go with it)."""
        self.run("drop")

    def delete(self, start: int, stop: int) -> int:
        [done] = self.run("delete", "--from", str(start), "--to", str(stop))
        return int(done["deleted"])

    def read(self, start: int, stop: int) -> dict[int, Row]:
        """Every present row of ids ``start..stop-1``, by id."""
        *rows, summary = self.run("read", "--from", str(start), "--to", str(stop))
        found = {int(r["id"]): Row(**r) for r in rows}
        if summary.get("present") != len(found):
            raise FlussProbeError(f"fluss-probe read printed {len(found)} rows but {summary}")
        return found

    def snapshots(self) -> list[BucketSnapshot]:
        return [
            BucketSnapshot(int(s["bucket"]), s["snapshot_id"], s["log_offset"], tuple(s["files"]))
            for s in self.run("snapshots")
        ]

    def offsets(self) -> dict[int, int]:
        """Each bucket's log end offset."""
        return {int(o["bucket"]): int(o["offset"]) for o in self.run("offsets")}

    def wait_for_snapshots(
        self, covering: Mapping[int, int], timeout_s: float = 90.0
    ) -> list[BucketSnapshot]:
        """The latest snapshots once every bucket has one whose log offset reaches
        ``covering``'s (bucket -> offset)."""
        deadline = time.monotonic() + timeout_s
        while True:
            latest = self.snapshots()
            if latest and all(
                s.log_offset is not None and s.log_offset >= covering.get(s.bucket, 0)
                for s in latest
            ):
                return latest
            if time.monotonic() > deadline:
                raise FlussProbeError(
                    f"no snapshots reaching {dict(covering)} after {timeout_s:g}s: {latest}"
                )
            time.sleep(1)

    def start_await(
        self, rows: tuple[int, int], step: int, version: int, log: Path, timeout_s: int = 600
    ) -> subprocess.Popen[str]:
        """Start a client that looks up rows ``rows[0]``, every ``step``-th after it and
        ``rows[1]-1`` until each is there at ``version``; ``served_at`` reads when."""
        return subprocess.Popen(
            self._command(
                "await",
                *("--from", str(rows[0]), "--to", str(rows[1]), "--step", str(step)),
                *("--version", str(version), "--timeout-s", str(timeout_s)),
            ),
            stdout=subprocess.PIPE,
            stderr=log.open("ab"),
            text=True,
        )

    @staticmethod
    def served_at(process: subprocess.Popen[str], log: Path) -> float:
        """The wall-clock time (epoch seconds) the ``start_await`` client saw every row."""
        assert process.stdout is not None
        line = process.stdout.readline()
        process.wait()
        if not line.startswith("{"):
            raise FlussProbeError(
                f"fluss-probe await failed (exit {process.returncode}): "
                f"{log.read_text(errors='replace')[-3000:]}"
            )
        return int(json.loads(line)["served_at_ms"]) / 1000

    def undo(self, offsets: Mapping[int, int]) -> dict[str, int]:
        """Undo every change after ``offsets`` (bucket -> offset) from the changelog."""
        pairs = ",".join(f"{bucket}={offset}" for bucket, offset in sorted(offsets.items()))
        [done] = self.run("undo", "--offsets", pairs)
        return {k: int(v) for k, v in done.items()}

    def start_writer(
        self, upsert: tuple[int, int], delete: tuple[int, int], version: int, log: Path
    ) -> subprocess.Popen[str]:
        """Start a writer that upserts and deletes, flushes, then waits (a job before its
        first checkpoint); returns once it printed what it wrote."""
        process = subprocess.Popen(
            self._command(
                "write",
                *("--from", str(upsert[0]), "--to", str(upsert[1])),
                *("--delete-from", str(delete[0]), "--delete-to", str(delete[1])),
                *("--version", str(version)),
            ),
            stdout=subprocess.PIPE,
            stderr=log.open("ab"),
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("{"):
            process.kill()
            process.wait()
            raise FlussProbeError(f"the Fluss writer exited before writing; its log: {log}")
        return process
