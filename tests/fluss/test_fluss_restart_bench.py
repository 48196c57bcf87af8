"""bench_fluss_restart's measure on the real cluster, small: the client's ``await`` sees the
table served again after each restart, the first restart downloads each bucket's snapshot
and the second (every node dropped) none, and the table is dropped after."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_fluss_restart import BUCKETS, measure
from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.local.fluss_probe import FlussProbe, FlussProbeError


@pytest.mark.fluss
def test_the_restart_measure_runs_both_cases_as_named(fluss_cluster: FlussCluster, tmp_path: Path):
    nodes = ZooKeeperFlussNodes(fluss_cluster.zookeeper_address)
    try:
        figures = measure(fluss_cluster, nodes, 3000, tmp_path / "probe.log")
    finally:
        nodes.close()
    assert figures["from_snapshot_downloads"] == BUCKETS
    assert figures["whole_log_downloads"] == 0
    assert figures["from_snapshot_s"] > 0 and figures["whole_log_s"] > 0
    assert figures["from_snapshot_cpu_s"] > 0 and figures["whole_log_cpu_s"] > 0
    # measure dropped its table: a lookup of it now fails
    with pytest.raises(FlussProbeError, match="not exist"):
        FlussProbe(fluss_cluster.bootstrap_servers, "bench.rows_3000").read(0, 1)


@pytest.mark.fluss
def test_await_gives_up_after_its_timeout_naming_what_it_saw(fluss_table, tmp_path: Path):
    probe, _ = fluss_table(1)
    probe.upsert(0, 10, version=1)
    log = tmp_path / "await.log"
    waiting = probe.start_await((0, 10), 1, 2, log, timeout_s=1)  # version 2 never comes
    with pytest.raises(FlussProbeError, match=r"not served after 1 s .*row 0 at version 1"):
        FlussProbe.served_at(waiting, log)
    assert waiting.returncode == 3
