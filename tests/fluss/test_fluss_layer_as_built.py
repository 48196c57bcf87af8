"""The gc function's Fluss layer as ``-c fluss`` builds it (tests/infra/test_fluss_reach.py)
reads and drops a real Fluss cluster's snapshot nodes: snapledger's ZooKeeper adapter run by
a Python that sees no site-packages, only the layer's ``python/`` and snapledger."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
from snapledger.local.dynamodb_local import REPO_ROOT
from snapledger.local.fluss_cluster import FlussCluster
from tests.fluss.conftest import wait_for_snapshots
from tests.infra.conftest import synthesize_app
from tests.infra.test_fluss_reach import FLUSS_CONTEXT, layer_asset

SCRIPT = """
import json, sys
layer, shared, address, table_id = sys.argv[1:5]
sys.path[:0] = [layer, shared]
import kazoo
assert kazoo.__file__.startswith(layer), kazoo.__file__
from snapledger.adapters.zookeeper_fluss import ZooKeeperFlussNodes
nodes = ZooKeeperFlussNodes(address)
listed = sorted(nodes.listed(int(table_id), 0))
dropped = nodes.drop(int(table_id), 0, listed[0])
nodes.close()
print(json.dumps({"listed": listed, "dropped": dropped}))
"""


@pytest.mark.fluss
def test_the_layer_as_built_lists_and_drops_the_real_clusters_nodes(
    fluss_cluster: FlussCluster, fluss_table
):
    probe, table_id = fluss_table(1)
    for version in (1, 2):  # two snapshots of bucket 0 at least
        probe.upsert(0, 200, version=version)
        wait_for_snapshots(probe, probe.offsets())
    nodes = ZooKeeperFlussNodes(fluss_cluster.zookeeper_address)
    try:
        before = sorted(nodes.listed(table_id, 0))
        assert len(before) >= 2, before
        layer = layer_asset(synthesize_app(FLUSS_CONTEXT)) / "python"
        done = subprocess.run(
            [
                *(sys.executable, "-S", "-c", SCRIPT, str(layer), str(REPO_ROOT / "shared")),
                *(fluss_cluster.zookeeper_address, str(table_id)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        # what Fluss listed then, less any its retention dropped since, more any it added
        assert answer["listed"] and max(answer["listed"]) >= max(before)
        assert answer["dropped"] is True
        assert answer["listed"][0] not in nodes.listed(table_id, 0)
    finally:
        nodes.close()
