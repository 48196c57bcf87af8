"""The real Fluss 0.7.0 cluster (ZooKeeper, a coordinator, one tablet server), started once
per session, and the client program of fluss/client. Tests that use them are marked `fluss`;
install both with `make setup` (tools/install-fluss.sh and `mvn -f fluss/client/pom.xml
package`)."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client.control import Snapledger
from snapledger.clock import SystemClock
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.local.fluss_probe import BucketSnapshot, FlussProbe
from snapledger.local.handlers import invoke
from snapledger.runtime import runtime_override
from tests.functions.support import POWERTOOLS_ENV
from tests.support import make_runtime, moto_ledger

#: Snapshots every second (the bound's floor) so tests wait little; 3 retained per bucket.
SNAPSHOT_INTERVAL_S = 1
NUM_RETAINED = 3


@pytest.fixture(scope="session")
def fluss_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlussCluster]:
    started = time.monotonic()
    with FlussCluster(
        tmp_path_factory.mktemp("fluss-cluster"),
        snapshot_interval_s=SNAPSHOT_INTERVAL_S,
        num_retained=NUM_RETAINED,
    ) as cluster:
        print(f"\nfluss cluster up in {time.monotonic() - started:.1f}s", file=sys.stderr)
        yield cluster


_tables = itertools.count()


@pytest.fixture
def fluss_table(fluss_cluster: FlussCluster) -> Callable[[int], tuple[FlussProbe, int]]:
    """Creates a new primary-key table of n buckets: its probe and its table id."""

    def make(buckets: int) -> tuple[FlussProbe, int]:
        probe = FlussProbe(fluss_cluster.bootstrap_servers, f"probe.t{next(_tables)}")
        return probe, probe.create(buckets)

    return make


def wait_for_snapshots(
    probe: FlussProbe, covering: dict[int, int], timeout_s: float = 90.0
) -> list[BucketSnapshot]:
    """The latest snapshots once every bucket has one reaching ``covering`` (FlussProbe's)."""
    return probe.wait_for_snapshots(covering, timeout_s)


class _InProcess:
    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Snapledger]:
    """snapledger's client over the functions in-process, on a moto ledger."""
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), SystemClock())
        with runtime_override(runtime):
            yield Snapledger(_InProcess())
