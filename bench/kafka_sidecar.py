"""The snapshot sidecar in a process of its own, for the Kafka Streams throughput benchmark
(bench_kafka_streams.py): ``SnapshotSidecar``, the loop ``snapledger kafka-streams snapshot
--every-seconds T`` runs, against the benchmark's local registry (its DynamoDB Local
``--endpoint``, its ``file://`` store under ``--home``), each snapshot delivered to
``register`` in this process as the local router delivers an arrival, and checked by the
kafka-streams layout (the changelog of ``--application-id`` and ``--store`` is a Kafka
Streams stream of its registry, as the benchmark's own process has it).

The benchmark starts it under ``nice -n 19``, as a sidecar sharing a host with the
application should run (docs/kafka-streams.md, "Snapshots on a schedule": on Kubernetes the
sidecar container's own CPU request does this). It prints one JSON line per snapshot made
(``{"partition": p, "lsn": n, "at": when registered, a time.time(), "layout": the one that
checked it}``) and stops on SIGTERM
after the run in flight.

``python -m bench.kafka_sidecar --endpoint URL --home DIR --servers HOST:PORT --application-id
ID --store NAME --every-seconds T [--poll-seconds P] --work DIR``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from snapledger.client.control import Snapledger
from snapledger.client.writer import WrittenSnapshot
from snapledger.kafka_streams.schedule import SnapshotSchedule
from snapledger.kafka_streams.sidecar import SnapshotSidecar
from snapledger.kafka_streams.snapshotter import PartitionSnapshot, StoreSnapshotter
from snapledger.local.handlers import HANDLERS
from snapledger.local.kafka_app import changelog_topic
from snapledger.local.kafka_world import InProcess
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime

#: The layout each registered snapshot was checked by, by its manifest key.
_checked_by: dict[str, str | None] = {}


def _deliver(router: Router, written: WrittenSnapshot) -> None:
    for answer in router.scan((written.prefix,), settled=True):
        _checked_by.update({r.get("key"): r.get("layout") for r in answer.get("records", [])})


def _said(run: PartitionSnapshot) -> None:
    if run.written is not None:
        snapshot = {
            "partition": run.partition,
            "lsn": run.written.lsn,
            "at": time.time(),
            "layout": _checked_by.get(run.written.manifest_key),
        }
        print(json.dumps(snapshot), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_sidecar", description=__doc__)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--servers", required=True)
    parser.add_argument("--application-id", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--every-seconds", type=int, required=True)
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args(argv)
    changelog = changelog_topic(args.application_id, args.store)  # the kafka-streams layout's
    local = LocalRuntime(home=args.home, endpoint=args.endpoint, kafka_streams=(changelog,))
    runtime = local.start()
    router = Router(runtime.store, HANDLERS, runtime.layouts)
    snapshotter = StoreSnapshotter(
        Snapledger(InProcess()),
        local.store_uri,
        args.servers,
        args.application_id,
        args.store,
        on_written=lambda written: _deliver(router, written),
    )
    args.work.mkdir(parents=True, exist_ok=True)
    sidecar = SnapshotSidecar(
        snapshotter,
        SnapshotSchedule(every_seconds=args.every_seconds),
        poll_seconds=args.poll_seconds,
        work_dir=args.work,
        on_snapshot=_said,
    )
    print("READY", flush=True)
    sidecar.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
