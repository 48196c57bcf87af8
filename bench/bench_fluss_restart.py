"""A Fluss tablet server restarted without its KV directories: the time until it serves again,
from the latest snapshot against without any snapshot (its whole log replayed), at 1M and
5M rows, in one run on one cluster (issue 46's measure).

The real Fluss 0.7.0 cluster of ``make setup`` (ZooKeeper, a coordinator, one tablet server;
``kv.snapshot.interval`` 5 s). For each size a table of 3 buckets gets that many rows
(``(id, "k<id>", 1, 20 bytes)``, upserted in 1M-row calls) and then a snapshot of each bucket
covering them all. Then twice: the tablet server is stopped (SIGTERM), its KV directories
deleted and started again, and a client already running looks up 1,000 of the rows (every
n/1,000-th and the last; a new connection each try, 100 ms apart) until every one answers at
its version:

- ``from_snapshot``: the buckets' snapshot nodes are in ZooKeeper: each bucket downloads its
  latest snapshot and replays the log after its ``log_offset`` (nothing: it covers all);
- ``whole_log``: every snapshot node of the table dropped first (as heal drops them): each
  bucket rebuilds its KV from the log's first record.

Figures per size: ``*_s`` the wall seconds from the tablet server's spawn to the client seeing
every row; ``*_cpu_s`` the tablet server's CPU seconds (user + system, /proc) by then, the JVM's
start included in both; ``snapshot_vs_log`` and ``snapshot_vs_log_cpu`` the ratios; the
buckets its log shows downloading a snapshot in each case (3, then 0: the cases are what they
say); ``write_rows_per_s``, the load's own rate. ``start_s``: the JVM and registration alone
(a restart with the table dropped), the floor under both.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.local.fluss_probe import FlussProbe

SIZES = (1_000_000, 5_000_000)
BUCKETS = 3
CHUNK = 1_000_000
PAYLOAD_BYTES = 20
LOOKED_UP = 1_000
SNAPSHOT_INTERVAL_S = 5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far (/proc/PID/stat's utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def downloads(cluster: FlussCluster, table_id: int) -> int:
    """The table's buckets the tablet server's log shows restored from a remote snapshot."""
    pattern = rf"Start to download kv snapshot .* for TableBucket\{{tableId={table_id}, "
    return len(re.findall(pattern, cluster.log_path("tablet-0").read_text(errors="replace")))


def restart(
    cluster: FlussCluster,
    probe: FlussProbe | None,
    rows: int,
    log: Path,
    while_stopped: Callable[[], None] = lambda: None,
) -> tuple[float, float]:
    """Stop the tablet server, wipe its KV (and call ``while_stopped``), start it: (wall s,
    its CPU s) until ``probe``'s client sees every sampled row (no probe: until it is
    registered)."""
    cluster.stop_tablet_server()
    cluster.wipe_tablet_kv()
    while_stopped()
    waiting = None
    if probe is not None:
        waiting = probe.start_await((0, rows), max(1, rows // LOOKED_UP), 1, log)
    spawned = time.time()
    cluster.start_tablet_server(timeout_s=900)
    pid = cluster.pids()["tablet-0"]
    served = FlussProbe.served_at(waiting, log) if waiting is not None else time.time()
    return served - spawned, cpu_seconds(pid)


def measure(
    cluster: FlussCluster, nodes: ZooKeeperFlussNodes, rows: int, log: Path
) -> dict[str, Any]:
    probe = FlussProbe(cluster.bootstrap_servers, f"bench.rows_{rows}")
    table_id = probe.create(BUCKETS)
    started = time.monotonic()
    for start in range(0, rows, CHUNK):
        probe.upsert(start, min(rows, start + CHUNK), 1, payload_bytes=PAYLOAD_BYTES)
    written_s = time.monotonic() - started
    probe.wait_for_snapshots(probe.offsets(), timeout_s=600)
    before = downloads(cluster, table_id)
    snapshot_s, snapshot_cpu = restart(cluster, probe, rows, log)
    from_snapshot = downloads(cluster, table_id) - before

    def drop_every_node() -> None:  # with the tablet server stopped: it makes no new one
        for bucket in range(BUCKETS):
            for snapshot_id in nodes.listed(table_id, bucket):
                nodes.drop(table_id, bucket, snapshot_id)

    before = downloads(cluster, table_id)
    log_s, log_cpu = restart(cluster, probe, rows, log, drop_every_node)
    from_log = downloads(cluster, table_id) - before
    probe.drop()
    return {
        "rows": rows,
        "write_rows_per_s": round(rows / written_s),
        "from_snapshot_s": round(snapshot_s, 2),
        "from_snapshot_cpu_s": round(snapshot_cpu, 2),
        "from_snapshot_downloads": from_snapshot,
        "whole_log_s": round(log_s, 2),
        "whole_log_cpu_s": round(log_cpu, 2),
        "whole_log_downloads": from_log,
        "snapshot_vs_log": round(snapshot_s / log_s, 3),
        "snapshot_vs_log_cpu": round(snapshot_cpu / log_cpu, 3),
    }


def run(config: Any) -> dict[str, object]:
    with tempfile.TemporaryDirectory(dir=config.workdir) as work:
        log = config.workdir / "fluss-probe.log"
        log.unlink(missing_ok=True)
        with FlussCluster(
            Path(work) / "cluster", snapshot_interval_s=SNAPSHOT_INTERVAL_S, heap="1g"
        ) as cluster:
            nodes = ZooKeeperFlussNodes(cluster.zookeeper_address)
            try:
                figures: dict[str, object] = {
                    f"{rows // 1_000_000}M": measure(cluster, nodes, rows, log) for rows in SIZES
                }
                start_s, start_cpu = restart(cluster, None, 0, log)
                figures["start_s"], figures["start_cpu_s"] = round(start_s, 2), round(start_cpu, 2)
            finally:
                nodes.close()
    return figures
