"""``make demo-restate``: a real Restate 1.7.12 cluster's snapshots managed by snapledger.

One machine, Restate unchanged: an S3 endpoint (moto's server mode on loopback), a Restate
node whose ``[worker.snapshots]`` destination is ``s3://snapledger-local/restate/cluster-a``
on it, a service with keyed state, and snapledger's functions over the same bucket (the
local runtime with ``s3_endpoint``, as ``snapledger local up --s3-port`` runs it; DynamoDB
Local in memory). The router delivers each ``metadata.json`` Restate writes to ``register``
as an S3 event, as the bucket's notifications do in AWS.

1. write keys and snapshot every partition, four times;
2. register every snapshot from the bucket's arrivals;
3. GC under a policy (the 2 newest, none younger than 1 h; the demo's clock is moved 2 h
   on) with a hold on partition 0's oldest: the rest deleted and dropped from Restate's
   latest.json; the node wiped and restarted: every key right;
4. one SST of partition 1's latest truncated, the node wiped: the partition cannot
   restore; a GC run heals it (latest.json repointed), the partition serves again, every
   key right;
5. partition 0 restored from a chosen retained snapshot, the node wiped: every key right.

Every check is printed; the exit status is non-zero if any fails (or a step breaks).
Install the server with tools/install-restate.sh (``make setup`` does it).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from snapledger.clock import ManualClock
from snapledger.demos.report import Report
from snapledger.local.aws_events import LOCAL_BUCKET
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.restate_cluster import RestateCluster
from snapledger.local.restate_config import RESTATE_VERSION, RestateHarnessError
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.runtime import Runtime, use_runtime
from snapledger.services.queries import iter_snapshots
from snapledger.services.restate_heal import restore_from_chosen
from snapledger.strategies.restate import RestateLayout

PREFIX = "restate/cluster-a"
STREAM = "payments"
PARTITIONS = 2
NUM_RETAINED = 4  # Restate's own retention: the policy below keeps fewer
ROUNDS = 4
MIN_COUNT, MIN_AGE_HOURS = 2, 1


@dataclass
class RestateDemo:
    cluster: RestateCluster
    rt: Runtime
    router: Router
    clock: ManualClock
    keys: int
    report: Report = field(default_factory=Report)
    values: dict[str, str] = field(default_factory=dict)

    @property
    def layout(self) -> RestateLayout:
        layout = self.rt.layouts.restate_for(STREAM)
        assert layout is not None  # configured in main()
        return layout

    def put_round(self, version: str) -> None:
        values = {f"key-{i:03d}": f"{i}-{version}" for i in range(self.keys)}
        self.cluster.put_many(values)
        self.values.update(values)

    def latest(self, partition: int) -> dict[str, Any]:
        document = self.cluster.read_json(self.layout.latest_key(partition))
        return document if isinstance(document, dict) else {}

    def records(self, partition: int) -> list[Any]:
        return list(iter_snapshots(self.rt.ledger, LineageId(stream=STREAM, partition=partition)))

    def live(self, partition: int) -> list[Any]:
        registered = (r for r in self.records(partition) if r.status is SnapshotStatus.REGISTERED)
        return sorted(registered, key=lambda r: r.lsn)

    def register_arrivals(self) -> list[dict[str, Any]]:
        """Deliver every new metadata.json as the bucket would; print each outcome."""
        outcomes = [r for a in self.router.scan(settled=True) for r in a.get("records", [])]
        for record in outcomes:
            why = f" ({record['reason']})" if record.get("reason") else ""
            print(f"   {record['key']}: {record['outcome']}{why}", flush=True)
        return outcomes

    def gc(self) -> dict[str, Any]:
        answer = invoke("gc", {})
        report = answer.get("report")
        if not answer.get("ok") or not isinstance(report, dict):
            raise RuntimeError(f"the gc function refused: {answer.get('message', answer)}")
        for lineage in report.get("lineages", []):
            if lineage.get("stream") != STREAM:
                continue
            kept, deleted = len(lineage.get("kept", [])), len(lineage.get("deleted", []))
            print(f"   {STREAM}/{lineage['partition']}: {kept} kept, {deleted} deleted", flush=True)
            for note in lineage.get("notes", []):
                print(f"     note: {note}", flush=True)
        return report

    def restart_and_check(self, label: str) -> None:
        """Kill the node, wipe its partition store, start it: every key must answer."""
        print("   node killed, its partition store wiped, started again", flush=True)
        self.cluster.restart_wiped()
        try:
            seconds = self.cluster.wait_every_key(self.values, within_s=60)
        except RestateHarnessError as exc:
            self.report.check(f"every key right {label}", False, str(exc)[:300])
            return
        detail = f"{len(self.values)} keys, all answered within {seconds:.1f}s"
        self.report.check(f"every key right {label}", True, detail)


def write_and_register(demo: RestateDemo) -> None:
    with demo.report.step("1. Write keys and snapshot every partition"):
        for round_ in range(ROUNDS):
            demo.put_round(f"v{round_}")
            created = demo.cluster.create_snapshots()
            ids = ", ".join(f"partition {c.partition}: {c.snapshot_id}" for c in created)
            print(f"   round v{round_}: {demo.keys} keys written; snapshots {ids}", flush=True)
    with demo.report.step("2. Register the snapshots as they land (S3 events)"):
        outcomes = demo.register_arrivals()
        on_bucket = {o.key for o in demo.cluster.list_bucket() if o.key.endswith("/metadata.json")}
        registered = {r["key"] for r in outcomes if r["outcome"] in ("became_latest", "recorded")}
        demo.report.check(
            "every snapshot Restate wrote is registered",
            registered == on_bucket and len(outcomes) == len(on_bucket),
            f"{len(registered)} of {len(on_bucket)} metadata.json",
        )
        for partition in range(PARTITIONS):
            head = demo.rt.ledger.get_head(LineageId(stream=STREAM, partition=partition))
            named = demo.latest(partition)["snapshot_id"]
            demo.report.check(
                f"{STREAM}/{partition}'s latest is the one Restate's latest.json names",
                head is not None and head.latest_snapshot_id == named,
                named,
            )


def retain(demo: RestateDemo) -> None:
    with demo.report.step("3. Retain by policy, with a hold; then wipe the node"):
        answer = invoke(
            "gc",
            {
                "action": "policy_set",
                "stream": STREAM,
                "min_count": MIN_COUNT,
                "min_age_hours": MIN_AGE_HOURS,
                "by": "demo",
            },
        )
        demo.report.check("policy set", bool(answer.get("ok")), answer.get("message", ""))
        print(f"   policy: the {MIN_COUNT} newest, none younger than {MIN_AGE_HOURS} h", flush=True)
        oldest = demo.live(0)[0]
        held = invoke(
            "gc",
            {
                "action": "hold",
                "stream": STREAM,
                "partition": 0,
                "snapshot_id": oldest.snapshot_id,
                "reason": "demo: keep partition 0's oldest",
                "by": "ops",
            },
        )
        demo.report.check(
            f"hold on {STREAM}/0's oldest",
            bool(held.get("ok")),
            f"{oldest.snapshot_id} (LSN {oldest.lsn})" if held.get("ok") else str(held),
        )
        demo.clock.advance(timedelta(hours=2))
        print("   the demo's clock moved 2 h on: every snapshot is older than the floor")
        report = demo.gc()
        demo.report.check("GC ran without failures", not report.get("failed"), "")
        for partition in range(PARTITIONS):
            live = demo.live(partition)
            want = MIN_COUNT + 1 if partition == 0 else MIN_COUNT
            held_kept = partition != 0 or oldest.snapshot_id in {r.snapshot_id for r in live}
            demo.report.check(
                f"{STREAM}/{partition} keeps {want}",
                len(live) == want and held_kept,
                f"{len(live)} registered" + (", the held one among them" if partition == 0 else ""),
            )
            retained = {e["snapshot_id"] for e in demo.latest(partition)["retained_snapshots"]}
            demo.report.check(
                f"{STREAM}/{partition}: Restate's latest.json retains exactly those",
                retained == {r.snapshot_id for r in live},
                f"{len(retained)} in retained_snapshots",
            )
            folders = {
                o.key.rsplit("/", 1)[0]
                for o in demo.cluster.list_bucket(demo.layout.root(partition))
            }
            gone = [r for r in demo.records(partition) if r.status is SnapshotStatus.DELETED]
            demo.report.check(
                f"{STREAM}/{partition}: the deleted snapshots' files are gone",
                bool(gone) and not any(r.manifest_key.rsplit("/", 1)[0] in folders for r in gone),
                f"{len(gone)} deleted",
            )
        demo.put_round("after-gc")  # in Restate's log only
        demo.restart_and_check("after GC")


def heal(demo: RestateDemo) -> None:
    with demo.report.step("4. A corrupt SST in partition 1's latest, healed"):
        latest = demo.latest(1)
        folder = f"{demo.layout.root(1)}{latest['path']}/"
        sst = next(o for o in demo.cluster.list_bucket(folder) if o.key.endswith(".sst"))
        body = demo.cluster.read_object(sst.key)
        demo.cluster.s3.put_object(
            Bucket=demo.cluster.bucket, Key=sst.key, Body=body[: len(body) // 2]
        )
        print(f"   {sst.key}: truncated to {len(body) // 2} of {len(body)} bytes", flush=True)
        demo.put_round("after-corruption")
        demo.cluster.restart_wiped()
        failing = f"partition 1 snapshot {latest['snapshot_id']}"
        deadline = time.monotonic() + 30
        while failing not in demo.cluster.server_log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        tried = failing in demo.cluster.server_log.read_text(errors="replace")
        demo.report.check(
            "Restate fails to restore partition 1 from it", tried, "its processor retries"
        )
        started = time.monotonic()
        report = demo.gc()
        heals = [
            lineage["heal"]
            for lineage in report.get("lineages", [])
            if lineage.get("stream") == STREAM and (lineage.get("heal") or {}).get("problems")
        ]
        healed = heals[0] if len(heals) == 1 else {}
        for problem in healed.get("problems", []):
            print(f"   found broken: {problem}", flush=True)
        demo.report.check(
            "GC's heal check repoints partition 1's latest.json",
            healed.get("state") == "healed"
            and demo.latest(1)["snapshot_id"] == healed.get("healed_to"),
            f"{latest['snapshot_id']} -> {healed.get('healed_to')}",
        )
        demo.report.check(
            "the broken latest is counted (the alarm's metric)",
            report.get("counts", {}).get("latests_broken") == 1,
            "",
        )
        try:
            seconds = demo.cluster.wait_every_key(demo.values, within_s=60)
        except RestateHarnessError as exc:
            demo.report.check("partition 1 serves again, every key right", False, str(exc)[:300])
        else:
            waited = seconds + time.monotonic() - started
            demo.report.check(
                "partition 1 serves again, every key right", True, f"{waited:.1f}s after the heal"
            )


def restore_chosen(demo: RestateDemo) -> None:
    with demo.report.step("5. Restore partition 0 from a chosen snapshot"):
        retained = demo.latest(0)["retained_snapshots"]
        chosen = retained[-1]["snapshot_id"]
        lsn = retained[-1]["min_applied_lsn"]
        print(f"   chosen: {chosen}, the oldest Restate retains (LSN {lsn})", flush=True)
        result = restore_from_chosen(
            demo.rt.ledger,
            demo.rt.store,
            demo.clock,
            demo.layout,
            0,
            snapshot_id=chosen,
            request_id="demo-restate-restore",
            by="alice",
            reason="demo: restore from a chosen snapshot",
        )
        print(f"   latest.json: {result.previous_snapshot_id} -> {result.snapshot_id}", flush=True)
        demo.report.check(
            "partition 0's latest.json names the chosen snapshot",
            demo.latest(0)["snapshot_id"] == chosen,
            chosen,
        )
        demo.put_round("after-restore-choice")
        demo.restart_and_check("after the restore from the chosen snapshot")
        log = demo.cluster.server_log.read_text(errors="replace")
        demo.report.check("Restate restored partition 0 from it", chosen in log, "its log says so")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo-restate", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path("demo-data/restate"), help="demo folder (wiped)"
    )
    parser.add_argument("--keys", type=int, default=40, help="keys written each round")
    args = parser.parse_args(argv)
    if args.keys < 1:
        parser.error("need --keys >= 1")
    root = args.root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    cluster = RestateCluster(
        root / "cluster",
        partitions=PARTITIONS,
        num_retained=NUM_RETAINED,
        bucket=LOCAL_BUCKET,
        prefix=PREFIX,
    )
    print(f"starting moto's S3 endpoint, Restate {RESTATE_VERSION} and the service...", flush=True)
    demo: RestateDemo | None = None
    started = time.perf_counter()
    try:
        with cluster:
            print(
                f"   S3 endpoint {cluster.s3_endpoint}; Restate snapshots to "
                f"s3://{cluster.bucket}/{cluster.prefix} ({PARTITIONS} partitions, "
                f"num-retained {NUM_RETAINED}); logs in {cluster.work_dir}",
                flush=True,
            )
            local = LocalRuntime(
                home=root / "state",
                in_memory=True,
                s3_endpoint=cluster.s3_endpoint,
                restate_prefixes={PREFIX: STREAM},
            )
            with local as runtime:
                clock = ManualClock(datetime.now(UTC))
                rt = replace(runtime, clock=clock)
                use_runtime(rt)
                print(
                    f"   snapledger: store {local.store_uri}, prefix {PREFIX} is stream {STREAM}",
                    flush=True,
                )
                demo = RestateDemo(
                    cluster, rt, Router(rt.store, HANDLERS, rt.layouts), clock, args.keys
                )
                write_and_register(demo)
                retain(demo)
                heal(demo)
                restore_chosen(demo)
    except KeyboardInterrupt:
        print("\ninterrupted: Restate, moto and DynamoDB Local stopped", file=sys.stderr)
        return 130
    except RestateHarnessError as exc:
        print(f"demo-restate: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    if demo is None:
        print("FAILED: the demo did not start", file=sys.stderr)
        return 1
    return demo.report.exit_status(f" in {elapsed:.0f}s")


if __name__ == "__main__":
    sys.exit(main())
