"""The time from a damaged Restate latest to the partition serving again, with the real
Restate 1.7.12 server (``tests/restate/harness.py``: moto's S3 server on loopback, the
server, the keyed-state test service), against a baseline from the same run.

One cluster of ``PARTITIONS`` partitions (``num-retained`` 3), two snapshots of each
partition registered in a ledger on DynamoDB Local. Each of ``TRIALS`` trials:

- baseline: a round of writes (in the log only), the node's partition store wiped and the
  server restarted; ``healthy_restore_s`` is the time until every key answers its value
  (restore from latest.json's snapshot, replay of the log after it);
- damaged: one SST of partition 1's latest truncated, a round of writes, the node wiped and
  restarted, partition 1's processor seen failing on that snapshot in the server's log;
  then ``heal_partition`` (what each GC run does first for a Restate lineage) repoints
  latest.json to the previous retained snapshot; ``heal_to_serving_s`` is the time from the
  start of heal until every key answers its value.

Restate 1.7 retries a failed partition processor every ``RESTATE_RETRY_INTERVAL_S``: the
processor picks up the repointed latest.json at its next retry at the latest, so
``heal_to_serving_vs_floor`` = ``heal_to_serving_s`` ÷ (``healthy_restore_s`` + the retry
interval), best of the trials (target ≤ 1). Each trial repoints latest.json back to what
Restate wrote and takes a fresh snapshot first, so every trial heals the same way.
Skipped, with a note, when the Restate binaries are not installed (``make setup``).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store import open_object_store
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import ManualClock
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.ports import ObjectStore
from snapledger.services.registration import register_manifest
from snapledger.services.restate_heal import HEALED, heal_partition
from snapledger.strategies.catalog import LayoutCatalog
from tests.restate.harness import BUCKET, PREFIX, RestateHarness

RESTATE_RETRY_INTERVAL_S = 2.0  # Restate 1.7's partition processor retry, as measured here
PARTITIONS = 2
KEYS = 40
TRIALS = 3
DAMAGED = 1  # the partition whose latest is damaged
STREAM = "payments"
TABLE = f"bench-restate-heal-{uuid.uuid4().hex[:8]}"


def heal_figures(config: Any) -> dict[str, object]:
    """The heal figures, or a note when the Restate server is not installed."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = RestateHarness(Path(tmp))
        if not (probe.bin_dir / "restate-server").is_file():
            return {"heal_to_serving": f"skipped: no Restate server at {probe.bin_dir}"}
        return measure(Path(tmp) / "cluster", trials=TRIALS)


def measure(
    work_dir: Path, *, trials: int = TRIALS, dynamodb_endpoint: str | None = None
) -> dict[str, object]:
    """``trials`` trials on a cluster in ``work_dir``; the ledger on DynamoDB Local at
    ``dynamodb_endpoint``, or on one started here."""
    layouts = LayoutCatalog.of({PREFIX: STREAM})
    harness = RestateHarness(work_dir, partitions=PARTITIONS, num_retained=3)
    with contextlib.ExitStack() as stack:
        if dynamodb_endpoint is None:
            dynamodb_endpoint = stack.enter_context(DynamoDBLocal()).endpoint_url
        stack.enter_context(harness)
        client = local_dynamodb_client(dynamodb_endpoint)
        client.create_table(**create_table_request(TABLE))
        ledger = DynamoLedger(TABLE, client=client)
        store = open_object_store(f"s3://{BUCKET}", s3_client=harness.s3)
        cluster = _Cluster(harness, ledger, store, ManualClock(), layouts)
        rows = [cluster.trial(n) for n in range(trials)]
    best = min(rows, key=lambda row: row["heal_to_serving_s"])  # the run's least noisy
    floor = best["healthy_restore_s"] + RESTATE_RETRY_INTERVAL_S
    return {
        "heal_to_serving_s": best["heal_to_serving_s"],
        "healthy_restore_s": best["healthy_restore_s"],
        "restate_retry_interval_s": RESTATE_RETRY_INTERVAL_S,
        "heal_to_serving_vs_floor": best["heal_to_serving_s"] / floor,
        "heal_to_serving_vs_floor_target": 1.0,
        "heal_trials": rows,
    }


class _Cluster:
    """The running cluster, the ledger its snapshots are registered in, the keys' values."""

    def __init__(
        self,
        harness: RestateHarness,
        ledger: DynamoLedger,
        store: ObjectStore,
        clock: ManualClock,
        layouts: LayoutCatalog,
    ) -> None:
        self.harness, self.ledger, self.store, self.clock = harness, ledger, store, clock
        self.layouts = layouts
        layout = layouts.restate_for(STREAM)
        assert layout is not None
        self.layout = layout
        self.values: dict[str, str] = {}
        self.registered: set[str] = set()

    def write_round(self, version: str) -> None:
        values = {f"key-{i:03d}": f"{i}-{version}" for i in range(KEYS)}
        self.harness.put_many(values)
        self.values.update(values)

    def snapshot_and_register(self) -> None:
        self.harness.create_snapshots()
        for obj in self.harness.list_bucket():
            if obj.key.endswith("/metadata.json") and obj.key not in self.registered:
                register_manifest(
                    obj.key,
                    ledger=self.ledger,
                    store=self.store,
                    clock=self.clock,
                    layouts=self.layouts,
                )
                self.registered.add(obj.key)

    def restart_wiped(self) -> None:
        self.harness.kill_server()
        self.harness.wipe_partition_store()
        self.harness.start_server()

    def every_key_right(self, *, within_s: float = 90) -> float:
        started = time.monotonic()
        while time.monotonic() < started + within_s:
            try:
                answered = self.harness.get_many(self.values)
            except Exception:  # a partition not serving yet
                answered = {}
            if answered and all(answered[k] == v for k, v in self.values.items()):
                return time.monotonic() - started
            time.sleep(0.1)
        raise AssertionError(f"keys still wrong after {within_s}s")

    def trial(self, n: int) -> dict[str, float]:
        for round_ in range(2):  # two fresh snapshots of each partition: one to heal to
            self.write_round(f"t{n}-r{round_}")
            self.snapshot_and_register()
        self.write_round(f"t{n}-log")
        self.restart_wiped()
        healthy = self.every_key_right()

        latest = self.harness.read_json(f"{PREFIX}/{DAMAGED}/latest.json")
        folder = f"{PREFIX}/{DAMAGED}/{latest['path']}/"
        sst = next(o for o in self.harness.list_bucket(folder) if o.key.endswith(".sst"))
        body = self.harness.read_object(sst.key)
        self.harness.s3.put_object(Bucket=BUCKET, Key=sst.key, Body=body[: len(body) // 2])
        self.write_round(f"t{n}-damaged")
        self.restart_wiped()
        failing = f"partition {DAMAGED} snapshot {latest['snapshot_id']}"
        deadline = time.monotonic() + 60
        while failing not in self.harness.server_log.read_text(errors="replace"):  # this run
            assert time.monotonic() < deadline, "the partition never tried the damaged snapshot"
            time.sleep(0.1)
        started = time.monotonic()
        outcome = heal_partition(self.ledger, self.store, self.clock, self.layout, DAMAGED)
        assert outcome.state == HEALED, outcome.to_dict()
        self.every_key_right()
        heal_to_serving = time.monotonic() - started
        return {"healthy_restore_s": healthy, "heal_to_serving_s": heal_to_serving}
