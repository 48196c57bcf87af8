"""Materialize a compacted Kafka topic and checkpoint it through snapledger.

    python -m examples.ktable_checkpointer --topic prices --bootstrap-servers localhost:9092 \\
        --root s3://my-bucket --stack Snapledger
    python -m examples.ktable_checkpointer --topic prices --bootstrap-servers 127.0.0.1:9092 \\
        --root file://$PWD/.local/state/store --local --once

At start each partition is loaded from its latest registered checkpoint (or read from the
beginning); then the topic is consumed, and every --every-records records or
--every-seconds seconds (whichever first, at most once a second) each changed partition is
checkpointed. Ctrl-C (or SIGTERM) stops it after a last checkpoint; --once stops once the
topic is read to its end.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

import snapledger.local
from examples.ktable_checkpointer.checkpointer import KTableCheckpointer
from snapledger.client import Snapledger


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog="python -m examples.ktable_checkpointer", description=__doc__.splitlines()[0]
    )
    made.add_argument("--topic", required=True, help="the compacted topic to materialize")
    made.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port]")
    made.add_argument("--root", required=True, help="file:///dir or s3://bucket[/prefix]")
    made.add_argument("--stream", help="the snapledger stream (default: the topic's name)")
    made.add_argument(
        "--every-records", type=int, default=10_000, help="checkpoint after N records (1-1e7)"
    )
    made.add_argument(
        "--every-seconds", type=float, default=300.0, help="... or T seconds (1-86400)"
    )
    made.add_argument("--epoch", type=int, default=1, help="writer epoch (default 1)")
    made.add_argument(
        "--min-count", type=int, default=10, help="retention: keep the newest N (1-50)"
    )
    made.add_argument(
        "--min-age-hours", type=float, default=12.0, help="retention: keep younger ones"
    )
    made.add_argument(
        "--keep-policy", action="store_true", help="leave the stream's retention policy as is"
    )
    made.add_argument("--once", action="store_true", help="stop once read to the end")
    made.add_argument("--local", action="store_true", help="register with the local runtime")
    made.add_argument("--stack", default="Snapledger", help="the deployment's stack name")
    return made


def main(argv: list[str] | None = None, *, registry: Snapledger | None = None) -> int:
    """``registry``: the registry to use (tests pass one); else ``--local`` or ``--stack``."""
    args = parser().parse_args(argv)
    if registry is None:
        with snapledger.local.connect() if args.local else Snapledger.for_stack(args.stack) as own:
            return run(args, own)
    return run(args, registry)


def run(args: argparse.Namespace, registry: Snapledger) -> int:
    checkpointer = KTableCheckpointer(
        args.topic,
        args.bootstrap_servers,
        args.root,
        registry=registry,
        stream=args.stream,
        every_records=args.every_records,
        every_seconds=args.every_seconds,
        epoch=args.epoch,
        retention_min_count=args.min_count,
        retention_min_age_hours=args.min_age_hours,
        set_retention=not args.keep_policy,
    )
    stopping: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        stopping.append(signum)

    with checkpointer:
        for boot in checkpointer.boots.values():
            start = "beginning" if boot.lsn is None else f"checkpoint {boot.snapshot_id}"
            print(f"partition {boot.partition}: from {start} ({boot.reason})")
        if args.once:
            checkpointer.catch_up()
        else:
            signal.signal(signal.SIGTERM, stop)
            try:
                while not stopping:
                    checkpointer.poll(1.0)
            except KeyboardInterrupt:
                pass
    for written in checkpointer.written:
        print(f"checkpoint lsn={written.lsn} prefix={written.prefix}")
    print(f"records_read={checkpointer.records_read}")
    print(f"keys={len(checkpointer.table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
