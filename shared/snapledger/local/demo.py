"""``make demo``: the snapshot lifecycle on the embedded default, on one machine.

DynamoDB Local (started here, stopped on exit and on Ctrl-C), a ``file://`` store under
``demo-data/``, the same registration code the Lambda functions run. Every check it
prints is asserted; the exit status is non-zero if any fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import SystemClock
from snapledger.ids import new_ulid
from snapledger.layout import snapshot_prefix
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.models.ledger import LineageId
from snapledger.services import queries
from snapledger.services.registration import Outcome, RegistrationResult, register_manifest

TABLE = "snapledger-demo"


@dataclass
class Report:
    """Checks and timings, printed as a table at the end."""

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    timings: list[tuple[str, float]] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append((name, ok, detail))
        print(f"  [{'ok' if ok else 'FAIL'}] {name} {detail}", flush=True)

    @property
    def failed(self) -> list[str]:
        return [name for name, ok, _ in self.checks if not ok]


def write_snapshot(
    store: FileObjectStore, stream: str, partition: int, lsn: int, epoch: int, *, rows: int = 100
) -> str:
    """A processor's snapshot: data files first, the manifest last."""
    sid = new_ulid()
    prefix = snapshot_prefix(stream, partition, lsn, sid)
    data = json.dumps({"rows": rows, "lsn": lsn}).encode() * 8
    store.put(prefix + "part-00000.parquet", data)
    manifest = {
        "format_version": 1,
        "stream": stream,
        "partition": partition,
        "lsn": lsn,
        "snapshot_id": sid,
        "epoch": epoch,
        "producer": {"name": "demo-processor", "version": "1"},
        "source": {"kind": "processor"},
        "files": [{"path": "part-00000.parquet", "size": len(data), "rows": rows}],
    }
    store.put(prefix + "_manifest.json", json.dumps(manifest).encode())
    return prefix + "_manifest.json"


def run_scenario(ledger: DynamoLedger, store: FileObjectStore, partitions: int) -> Report:
    report = Report()
    clock = SystemClock()

    def register(key: str) -> RegistrationResult:
        return register_manifest(key, ledger=ledger, store=store, clock=clock)

    print(f"registering snapshots for {partitions} partitions of 'orders'...", flush=True)
    for partition in range(partitions):
        lineage = LineageId(stream="orders", partition=partition)
        results = [
            register(write_snapshot(store, "orders", partition, lsn, 1))
            for lsn in (1000, 2000, 3000)
        ]
        late = register(write_snapshot(store, "orders", partition, 1500, 1))
        duplicate = register(results[-1].manifest_key)
        fenced_first = register(write_snapshot(store, "orders", partition, 4000, 2))
        fenced = register(write_snapshot(store, "orders", partition, 5000, 1))
        bad_key = write_snapshot(store, "orders", partition, 6000, 2)
        escaping = json.loads(store.get(bad_key))
        escaping["files"][0]["path"] = "../../escape.parquet"  # tries to leave its prefix
        store.put(bad_key, json.dumps(escaping).encode())
        rejected = register(bad_key)
        head = queries.latest(ledger, lineage)
        report.check(
            f"orders/{partition}: pointer only moved forward",
            [r.outcome for r in results] == [Outcome.BECAME_LATEST] * 3
            and late.outcome is Outcome.RECORDED,
        )
        report.check(
            f"orders/{partition}: redelivery is a no-op", duplicate.outcome is Outcome.DUPLICATE
        )
        report.check(
            f"orders/{partition}: older epoch fenced",
            fenced_first.outcome is Outcome.BECAME_LATEST and fenced.outcome is Outcome.FENCED,
        )
        report.check(
            f"orders/{partition}: invalid manifest rejected with reason",
            rejected.outcome is Outcome.REJECTED and "escape" in (rejected.reason or ""),
        )
        report.check(
            f"orders/{partition}: latest is LSN 4000",
            head.latest_lsn == 4000,
            f"(got {head.latest_lsn})",
        )
        events = queries.history(ledger, lineage, limit=1000).items
        report.check(
            f"orders/{partition}: events gapless",
            [e.seq for e in events] == list(range(1, len(events) + 1)),
            f"({len(events)} events)",
        )
    return report


def print_summary(ledger: DynamoLedger, partitions: int, report: Report) -> None:
    print("\nlineage        latest LSN  registered  rejected  events")
    for partition in range(partitions):
        head = queries.latest(ledger, LineageId(stream="orders", partition=partition))
        print(
            f"orders/{partition:<7} {head.latest_lsn:>11}  {head.registered_count:>10}"
            f"  {head.rejected_count:>8}  {head.version:>6}"
        )
    for name, seconds in report.timings:
        print(f"{name}: {seconds:.2f}s")
    print(f"\n{len(report.checks) - len(report.failed)} of {len(report.checks)} checks passed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__)
    parser.add_argument(
        "--root", type=Path, default=Path("demo-data"), help="local object store folder"
    )
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)
    if args.partitions < 1:
        parser.error("--partitions must be at least 1")
    shutil.rmtree(args.root, ignore_errors=True)
    store = FileObjectStore(args.root.resolve())
    print("starting DynamoDB Local...", flush=True)
    try:
        with DynamoDBLocal() as engine:
            client = local_dynamodb_client(engine.endpoint_url)
            client.create_table(**create_table_request(TABLE))
            ledger = DynamoLedger(TABLE, client=client)
            started = time.perf_counter()
            report = run_scenario(ledger, store, args.partitions)
            report.timings.append(("registration scenario", time.perf_counter() - started))
            print_summary(ledger, args.partitions, report)
    except KeyboardInterrupt:
        print("\ninterrupted: DynamoDB Local stopped", file=sys.stderr)
        return 130
    if report.failed:
        print(f"FAILED checks: {', '.join(report.failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
