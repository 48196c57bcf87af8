"""``restatectl``, Restate's cluster tool, as the local cluster (restate_cluster.py) runs it
against its node's fabric address: any command, and ``snapshots create`` read into the
snapshots it reports."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from snapledger.local.restate_config import RestateHarnessError

# `restatectl snapshots create` prints one line per partition, e.g.
# "Snapshot created for partition 0: snap_1745q2jaMGMSzzJs9zPIBEd (log 0 @ LSN >= 3)"
_CREATED = re.compile(
    r"^Snapshot created for partition (?P<partition>\d+): (?P<snapshot_id>snap_\w+) "
    r"\(log (?P<log_id>\d+) @ LSN >= (?P<lsn>\d+)\)$"
)


@dataclass(frozen=True)
class CreatedSnapshot:
    """One line of `restatectl snapshots create`: the snapshot Restate just uploaded."""

    partition: int
    snapshot_id: str
    log_id: int
    archived_lsn: int  # the LSN the repository held before ("LSN >= n"), not the new one


class Restatectl:
    """The ``restatectl`` binary under ``bin_dir``, pointed at the node at ``fabric_url``."""

    def __init__(self, bin_dir: Path, fabric_url: str) -> None:
        self.binary = bin_dir / "restatectl"
        self.fabric_url = fabric_url
        self._last_stderr = ""

    def run(self, *args: str, timeout_s: float = 60) -> str:
        """Its standard output; RestateHarnessError with both outputs if it exits non-zero."""
        command = [str(self.binary), "--address", self.fabric_url, "--yes", *args]
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=timeout_s
        )
        if done.returncode != 0:
            raise RestateHarnessError(
                f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        self._last_stderr = done.stderr
        return done.stdout

    def create_snapshots(self, partitions: int, retry_s: float = 30) -> list[CreatedSnapshot]:
        """`restatectl snapshots create`: a snapshot of every partition, uploaded when it
        returns (latest.json already names it). Right after a (re)start the cluster
        controller may not know the partition leaders yet ("Can not find a suitable node to
        take snapshot of partition n", exit code 0): those partitions are asked again."""
        created: dict[int, CreatedSnapshot] = {}
        deadline = time.monotonic() + retry_s
        while True:
            missing = [str(p) for p in range(partitions) if p not in created]
            output = self.run("snapshots", "create", *missing)
            for line in output.splitlines():
                match = _CREATED.match(line.strip())
                if match:
                    created[int(match["partition"])] = CreatedSnapshot(
                        partition=int(match["partition"]),
                        snapshot_id=match["snapshot_id"],
                        log_id=int(match["log_id"]),
                        archived_lsn=int(match["lsn"]),
                    )
            if len(created) == partitions:
                return [created[p] for p in range(partitions)]
            if time.monotonic() > deadline:
                raise RestateHarnessError(
                    f"no snapshot of partitions {missing} after {retry_s}s; restatectl said:\n"
                    f"{output}{self._last_stderr}"
                )
            time.sleep(0.25)
