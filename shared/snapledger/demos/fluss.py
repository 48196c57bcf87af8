"""``make demo-fluss``: a real Fluss 0.7 cluster's KV snapshots kept by snapledger, Fluss
unchanged (docs/fluss.md, "KV snapshots kept by snapledger").

One machine: ZooKeeper, a coordinator and a tablet server from the Maven jars
(``make setup``), ``remote.data.dir`` on the local registry's root, and the embedded
default registry (DynamoDB Local in memory, the functions in-process, the router playing S3's
notifications), its layout map naming the table's KV folder ``fluss-kv`` and its GC given
Fluss's ZooKeeper:

1. a primary-key table of 3 buckets; 4 rounds of upserts and deletes, each round's bucket
   snapshots registered as they land (the answers say which layout checked them);
2. GC under a policy (the newest 1 AND none younger than 1 h; the functions' clock moved
   2 h on) with a hold on bucket 0's second newest, Fluss's own ``num-retained`` high: what
   it deleted, the ZooKeeper nodes it dropped, every snapshot ZooKeeper still lists whole;
3. an SST only bucket 0's latest uses, torn; the next GC run heals it: the file and the
   snapshots it breaks named, the bucket's ZooKeeper latest moved back;
4. the tablet server stopped, its KV directories wiped and started again: it restores every
   bucket from what snapledger kept and serves every key as before.

Every check is printed; the exit status is non-zero if one fails. ``--rows`` sets the size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from snapledger.client.control import Snapledger
from snapledger.clock import ManualClock
from snapledger.demos.report import Report
from snapledger.layouts.layout_map import layout_map
from snapledger.local.fluss_cluster import FlussCluster
from snapledger.local.fluss_probe import FlussProbe
from snapledger.local.handlers import HANDLERS
from snapledger.local.kafka_world import InProcess
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.runtime import use_runtime
from snapledger.settings import ENV_FLUSS_ZOOKEEPER

TABLE = "demo.orders"
STREAM = "orders-kv"
BUCKETS, ROUNDS = 3, 4
#: Fluss keeps this many per bucket: above what snapledger's policy keeps, so snapledger decides.
NUM_RETAINED = 100


class FlussDemo:
    def __init__(self, cluster: FlussCluster, local: LocalRuntime, rows: int) -> None:
        self.cluster, self.rows, self.report = cluster, rows, Report()
        self.probe = FlussProbe(cluster.bootstrap_servers, TABLE)
        self.table_id = self.probe.create(BUCKETS)
        self.prefix = f"kv/demo/orders-{self.table_id}"
        local.layouts = layout_map({self.prefix: {"layout": "fluss-kv", "stream": STREAM}})
        local.settings = {ENV_FLUSS_ZOOKEEPER: cluster.zookeeper_address}
        runtime = local.start()
        self.clock = ManualClock(datetime.now(UTC))
        self.runtime = replace(runtime, clock=self.clock)
        use_runtime(self.runtime)
        self.store = self.runtime.store
        self.router = Router(self.store, HANDLERS, self.runtime.layouts)
        self.registry = Snapledger(InProcess())
        self.answers: list[dict[str, Any]] = []

    def run(self) -> None:
        cluster = self.cluster
        print(f"   Fluss at {cluster.bootstrap_servers}, ZooKeeper {cluster.zookeeper_address}")
        print(f"   table {TABLE} (id {self.table_id}): KV snapshots under {self.prefix}/")
        self.write_and_register()
        self.collect()
        self.heal()
        self.restore()

    @property
    def nodes(self) -> Any:
        """The ZooKeeper nodes the registry's GC reads (the composition built them)."""
        return self.runtime.layouts.for_stream(STREAM).nodes  # type: ignore[attr-defined]

    def listed(self, bucket: int) -> list[int]:
        return sorted(self.nodes.listed(self.table_id, bucket))

    def close(self) -> None:
        """The registry's ZooKeeper session ended before ZooKeeper stops."""
        self.nodes.close()

    def files_of(self, bucket: int, number: int) -> dict[str, int]:
        key = f"{self.prefix}/{bucket}/snap-{number}/_METADATA"
        handles = json.loads(self.store.get(key))["kv_snapshot_handle"]
        root = str(self.cluster.remote_dir) + "/"
        return {
            h["kv_file_handle"]["path"].removeprefix(root): h["kv_file_handle"]["size"]
            for group in ("shared_file_handles", "private_file_handles")
            for h in handles[group]
        }

    def whole(self) -> bool:
        sizes = {info.key: info.size for info in self.store.list(self.prefix + "/")}
        return all(
            sizes.get(key) == size
            for bucket in range(BUCKETS)
            for number in self.listed(bucket)
            for key, size in self.files_of(bucket, number).items()
        )

    def write_and_register(self) -> None:
        with self.report.step(f"1. A table of {BUCKETS} buckets, {ROUNDS} rounds of writes"):
            for version in range(1, ROUNDS + 1):
                self.probe.upsert(0, self.rows, version=version)
                self.probe.delete(version * 10, version * 10 + 5)
                self._wait_for_snapshots()
                answers = [r for a in self.router.scan(settled=True) for r in a.get("records", [])]
                self.answers += answers
                print(f"   round {version}: {_outcomes(answers)}", flush=True)
                self.clock.advance(timedelta(minutes=1))
            registered = [a for a in self.answers if a.get("outcome") == "became_latest"]
            self.report.check(
                "every bucket snapshot registered, checked by the fluss-kv layout",
                len(registered) >= BUCKETS * 2
                and all(a.get("layout") == "fluss-kv" for a in registered),
                _outcomes(self.answers),
            )

    def _wait_for_snapshots(self) -> None:
        import time

        ends = self.probe.offsets()
        for _ in range(120):
            latest = self.probe.snapshots()
            if latest and all((s.log_offset or -1) >= ends[s.bucket] for s in latest):
                return
            time.sleep(1)
        raise RuntimeError(f"no snapshots reaching {ends} after 120 s")

    def collect(self) -> None:
        report, registry = self.report, self.registry
        with report.step("2. GC: the newest 1 AND none younger than 1 h, a hold; clock +2 h"):
            answer = registry.call(
                "gc",
                {
                    "action": "policy_set",
                    "stream": STREAM,
                    "min_count": 1,
                    "min_age_hours": 1,
                    "by": "demo",
                },
            )
            report.check("policy set", bool(answer.get("ok")), answer.get("message", ""))
            snaps = registry.snapshots(STREAM, 0, limit=ROUNDS * 2).get("snapshots", [])
            second = sorted(snaps, key=lambda s: int(s["lsn"]))[-2]["snapshot_id"]
            held = registry.call(
                "gc",
                {
                    "action": "hold",
                    "stream": STREAM,
                    "partition": 0,
                    "snapshot_id": second,
                    "reason": "demo: keep bucket 0's second newest",
                    "by": "ops",
                },
            )
            report.check(f"hold on bucket 0's {second}", bool(held.get("ok")), "")
            before = {b: self.listed(b) for b in range(BUCKETS)}
            self.clock.advance(timedelta(hours=2))
            run = registry.call("gc", {"stream": STREAM})
            lineages = (run.get("report") or {}).get("lineages", [])
            deleted = {
                (lin["partition"], d["snapshot_id"])
                for lin in lineages
                for d in lin.get("deleted", [])
            }
            after = {b: self.listed(b) for b in range(BUCKETS)}
            for bucket in range(BUCKETS):
                print(f"   bucket {bucket}: ZooKeeper listed {before[bucket]}, now {after[bucket]}")
            report.check("GC deleted the older snapshots", bool(deleted), f"{len(deleted)} deleted")
            report.check("the held one is kept", (0, second) not in deleted, second)
            report.check(
                "ZooKeeper lists nothing snapledger deleted",
                not any(f"snap-{n}" == s for (b, s) in deleted for n in after[b]),
                "",
            )
            report.check("every snapshot ZooKeeper lists is whole", self.whole(), "")

    def heal(self) -> None:
        report = self.report
        with report.step("3. An SST only bucket 0's latest uses, torn; GC heals"):
            listed = self.listed(0)
            latest, previous = (self.files_of(0, n) for n in (listed[-1], listed[-2]))
            torn = sorted(k for k in latest if "/shared/" in k and k not in previous)
            if not report.check("the latest has an SST of its own", bool(torn), ""):
                return
            (self.cluster.remote_dir / torn[0]).write_bytes(b"torn")
            run = self.registry.call("gc", {"stream": STREAM})
            heals = [
                lin["heal"]
                for lin in (run.get("report") or {}).get("lineages", [])
                if lin.get("partition") == 0 and lin.get("heal")
            ]
            heal = heals[0] if heals else {}
            print(f"   {json.dumps(heal)[:400]}", flush=True)
            report.check(
                "healed: the file named with the snapshots it breaks",
                heal.get("state") == "healed" and torn[0] in heal.get("breaks", {}),
                f"back to {heal.get('healed_to')}",
            )
            report.check(
                "ZooKeeper's latest of bucket 0 moved back",
                max(self.listed(0)) == listed[-2],
                f"snap-{listed[-2]}",
            )

    def restore(self) -> None:
        with self.report.step("4. The tablet server's KV wiped; it restores every bucket"):
            before = self.probe.read(0, self.rows)
            self.cluster.stop_tablet_server()
            wiped = self.cluster.wipe_tablet_kv()
            self.cluster.start_tablet_server()
            after = self.probe.read(0, self.rows)
            self.report.check(
                "every key served as before",
                after == before,
                f"{len(after):,} rows, {len(wiped)} KV folders wiped",
            )


def _outcomes(answers: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for answer in answers:
        what = f"{answer.get('outcome')} (layout {answer.get('layout')})"
        counts[what] = counts.get(what, 0) + 1
    return ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "nothing new"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo-fluss", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("demo-data/fluss"), help="wiped")
    parser.add_argument("--rows", type=int, default=3000, help="rows of the table (100..100,000)")
    args = parser.parse_args(argv)
    if not 100 <= args.rows <= 100_000:
        parser.error("need 100 <= --rows <= 100,000")
    root = args.root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    print("starting ZooKeeper, Fluss's coordinator and tablet server, DynamoDB Local...")
    local = LocalRuntime(home=root / "state", in_memory=True)
    demo: FlussDemo | None = None
    try:
        cluster = FlussCluster(
            root / "fluss",
            snapshot_interval_s=1,
            num_retained=NUM_RETAINED,
            remote_dir=local.root,
        )
        with cluster:
            try:
                demo = FlussDemo(cluster, local, args.rows)  # starts the local runtime
                demo.run()
            finally:
                if demo is not None:
                    demo.close()
                local.stop()
    except KeyboardInterrupt:
        print("\ninterrupted: Fluss and DynamoDB Local stopped", file=sys.stderr)
        return 130
    if demo is None:
        print("FAILED: the demo did not start", file=sys.stderr)
        return 1
    return demo.report.exit_status()


if __name__ == "__main__":
    sys.exit(main())
