"""Materialize a compacted Kafka topic and checkpoint it through snapledger.

    python -m examples.ktable_checkpointer --topic prices --bootstrap-servers localhost:9092 \\
        --root s3://my-bucket --stack Snapledger
    python -m examples.ktable_checkpointer --topic prices --bootstrap-servers 127.0.0.1:9092 \\
        --local --once

At start each partition is loaded from its latest registered checkpoint (or read from the
beginning); then the topic is consumed, and every --every-records records or
--every-seconds seconds (whichever first, at most once a second) each changed partition is
checkpointed. Ctrl-C (or SIGTERM) stops it after a last checkpoint; --once stops once the
topic is read to its end.

With --local the checkpoints go to the local runtime's store (--root left out) and each is
registered as soon as it is written: no `snapledger local up` needs to run. An error is one
line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import Any

from examples.ktable_checkpointer.checkpointer import KTableCheckpointer
from snapledger.client import Snapledger, WrittenSnapshot
from snapledger.errors import SnapledgerError

PROG = "python -m examples.ktable_checkpointer"
#: The deployment's stack without --stack (and without --local).
STACK = "Snapledger"
#: The exit status of every error (a bad option, an unreachable broker, a refused record).
ERROR = 2


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    made.add_argument("--topic", required=True, help="the compacted topic to materialize")
    made.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port]")
    made.add_argument(
        "--root",
        help="file:///dir or s3://bucket[/prefix] (with --local: the local runtime's store)",
    )
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
    made.add_argument("--stack", help=f"the deployment's stack name (default {STACK})")
    return made


def main(argv: list[str] | None = None, *, registry: Snapledger | None = None) -> int:
    """``registry``: the registry to use (tests pass one); else ``--local`` or ``--stack``.
    An error is one line on stderr (no traceback), exit 2."""
    args = parser().parse_args(argv)
    try:
        if registry is not None:
            return run(args, registry, _required_root(args.root))
        if args.local and args.stack is not None:
            raise SnapledgerError(
                "--local and --stack name two registries: give --local (the local runtime) "
                "or --stack NAME (a deployment), not both"
            )
        if args.local:
            return _run_local(args)
        root = _required_root(args.root)
        with Snapledger.for_stack(args.stack or STACK) as own:
            return run(args, own, root)
    except SnapledgerError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return ERROR


def _required_root(root: str | None) -> str:
    if root is None:
        raise SnapledgerError(
            "--root s3://bucket[/prefix] (or file:///dir) is required without --local"
        )
    return root


def _run_local(args: argparse.Namespace) -> int:
    """Run against the local runtime (its home: ``$SNAPLEDGER_LOCAL_HOME`` or .local/state),
    writing to its store and registering each checkpoint as it is written."""
    from snapledger.local.transport import LocalTransport

    transport = LocalTransport.open()
    try:
        root = transport.store_root(args.root)
        registry = Snapledger(transport)
        return run(args, registry, root, deliver=transport.deliver, s3_client=transport.s3_client())
    finally:
        transport.close()


def run(
    args: argparse.Namespace,
    registry: Snapledger,
    root: str,
    *,
    deliver: Callable[[WrittenSnapshot], list[dict[str, Any]]] | None = None,
    s3_client: Any = None,
) -> int:
    """Run the checkpointer; ``deliver`` registers a checkpoint written (the local
    runtime's; None: S3's notifications do), its outcomes printed with it."""
    outcomes: dict[str, list[str]] = {}

    def delivered(written: WrittenSnapshot) -> None:
        if deliver is not None:
            answers = deliver(written)
            outcomes[written.prefix] = [r["outcome"] for a in answers for r in a["records"]]

    checkpointer = KTableCheckpointer(
        args.topic,
        args.bootstrap_servers,
        root,
        registry=registry,
        stream=args.stream,
        every_records=args.every_records,
        every_seconds=args.every_seconds,
        epoch=args.epoch,
        retention_min_count=args.min_count,
        retention_min_age_hours=args.min_age_hours,
        set_retention=not args.keep_policy,
        s3_client=s3_client,
        on_written=delivered,
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
        registered = outcomes.get(written.prefix)
        said = "" if registered is None else f" registered: {', '.join(registered) or 'no'}"
        print(f"checkpoint lsn={written.lsn} prefix={written.prefix}{said}")
    print(f"records_read={checkpointer.records_read}")
    print(f"keys={len(checkpointer.table)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
