"""``snapledger``: latest, list, history, bootstrap, restore, jobs, gc, hold, release, policy,
and stream snapshots (stream-snapshot, generation, generations, restore-stream).

A thin layer over the control client (``snapledger.client.control.Snapledger``): it
parses arguments, calls the client and prints the answer. Targets a deployment in AWS
(found through the stack's outputs; ``--stack``, ``--region``) or the local runtime
(``--local``). Readable tables by default, ``--json`` for scripts.
Exit status: 0 answered, 1 refused (the answer says why), 2 bad arguments or unreachable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from snapledger.cli.render import render
from snapledger.cli.transport import STACK_NAME, AwsTransport, Transport
from snapledger.client.control import Answer, RequestRefusedError, Snapledger
from snapledger.errors import SnapledgerError

Command = Callable[[Snapledger, argparse.Namespace], Answer]


def cmd_latest(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.latest(args.stream, args.partition)


def cmd_list(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.snapshots(args.stream, args.partition, limit=args.limit, cursor=args.cursor)


def cmd_history(client: Snapledger, args: argparse.Namespace) -> Answer:
    # Without a partition: the stream's own log (its policy changes).
    return client.history(
        args.stream, args.partition, after_seq=args.after_seq, limit=args.limit, cursor=args.cursor
    )


def cmd_bootstrap(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.bootstrap(
        args.stream, args.partitions, target_lsn=args.target_lsn, request_id=args.request_id
    )


def cmd_restore(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.restore(
        args.stream,
        args.partition,
        snapshot_id=args.snapshot_id,
        as_of_lsn=args.as_of_lsn,
        as_of_time=args.as_of_time,
        target_lsn=args.target_lsn,
        request_id=args.request_id,
    )


def cmd_stream_snapshot(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.request_stream_snapshot(
        args.stream,
        args.partitions,
        min_lsn=dict(args.min_lsn or []),
        deadline_minutes=args.deadline_minutes,
        by=args.by,
        request_id=args.request_id,
    )


def cmd_generation(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.generation(args.stream, args.generation)


def cmd_generations(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.generations(args.stream, limit=args.limit, cursor=args.cursor)


def cmd_restore_stream(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.restore_stream(
        args.stream,
        args.generation,
        partitions=args.partitions,
        target_lsns=dict(args.target_lsn) if args.target_lsn else None,
        request_id=args.request_id,
    )


def cmd_jobs(client: Snapledger, args: argparse.Namespace) -> Answer:
    if args.job_id:
        return client.job(args.job_id)
    return client.jobs(limit=args.limit, cursor=args.cursor)


def cmd_gc(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.gc_plan(args.stream) if args.dry_run else client.gc(args.stream)


def cmd_hold(client: Snapledger, args: argparse.Namespace) -> Answer:
    expires = None if args.expires_in_hours is None else timedelta(hours=args.expires_in_hours)
    return client.hold(
        args.stream,
        args.partition,
        args.snapshot_id,
        expires_in=expires,
        reason=args.reason,
        by=args.by,
    )


def cmd_release(client: Snapledger, args: argparse.Namespace) -> Answer:
    return client.release(args.stream, args.partition, args.snapshot_id, hold_id=args.hold_id)


def cmd_policy(client: Snapledger, args: argparse.Namespace) -> Answer:
    if args.policy_command == "get":
        return client.policy(args.stream)
    change = {
        "by": args.by,
        "expected_version": args.expected_version,
        "request_id": args.request_id,
    }
    if args.policy_command == "reset":
        return client.reset_policy(args.stream, **change)
    return client.set_policy(
        args.stream,
        min_count=args.min_count,
        min_age_hours=args.min_age_hours,
        max_count=args.max_count,
        max_age_hours=args.max_age_hours,
        min_generations=args.min_generations,
        **change,
    )


def _partition_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of partitions: use e.g. 0,1,2"
        ) from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("partitions are numbers 0 or more, e.g. 0,1,2")
    return values


def _partition_lsn(text: str) -> tuple[int, int]:
    partition, sep, lsn = text.partition("=")
    try:
        pair = (int(partition), int(lsn))
    except ValueError:
        pair = (-1, -1)
    if not sep or min(pair) < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not PARTITION=LSN, e.g. 3=18000")
    return pair


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: use 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="snapledger", description=__doc__.split("\n")[0])
    parser.add_argument("--local", action="store_true", help="use the local runtime")
    parser.add_argument("--home", help="local runtime folder (default .local/state)")
    parser.add_argument("--stack", default=STACK_NAME, help="CloudFormation stack name")
    parser.add_argument("--region", help="AWS region of the stack")
    parser.add_argument("--json", action="store_true", help="print the raw JSON answer")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_query_commands(commands)
    _add_job_commands(commands)
    _add_retention_commands(commands)
    local = commands.add_parser("local", help="the long-running local runtime")
    local_commands = local.add_subparsers(dest="local_command", required=True)
    up = local_commands.add_parser("up", help="run DynamoDB Local, the router and local Spark")
    up.add_argument("--poll-seconds", type=float, default=1.0)
    return parser


Subparsers = Any  # argparse's private _SubParsersAction


def _lineage_command(
    commands: Subparsers, name: str, fn: Command, text: str
) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(name, help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("partition", type=_non_negative)
    sub.set_defaults(build=fn)
    return sub


def _add_query_commands(commands: Subparsers) -> None:
    _lineage_command(commands, "latest", cmd_latest, "the latest snapshot of a partition")
    sub = _lineage_command(commands, "list", cmd_list, "a partition's snapshots, newest first")
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")
    text = "a partition's events in order; without a partition, the stream's (policy changes)"
    sub = commands.add_parser("history", help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("partition", type=_non_negative, nargs="?")
    sub.set_defaults(build=cmd_history)
    sub.add_argument("--after-seq", type=_non_negative)
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")


def _add_job_commands(commands: Subparsers) -> None:
    sub = commands.add_parser("bootstrap", help="build first snapshots from the changelog")
    sub.add_argument("stream")
    sub.add_argument("--partitions", type=_partition_list, required=True, help="e.g. 0,1,2,3")
    sub.add_argument("--target-lsn", type=_non_negative)
    sub.add_argument("--request-id", help="repeat it to make the request idempotent")
    sub.set_defaults(build=cmd_bootstrap)
    text = "restore state from a snapshot + the changelog"
    sub = _lineage_command(commands, "restore", cmd_restore, text)
    choice = sub.add_mutually_exclusive_group()
    choice.add_argument("--snapshot-id")
    choice.add_argument("--as-of-lsn", type=_non_negative)
    choice.add_argument("--as-of-time", help="ISO-8601 with a timezone, e.g. 2026-05-01T12:00Z")
    sub.add_argument("--target-lsn", type=_non_negative)
    sub.add_argument("--request-id")
    _add_stream_snapshot_commands(commands)
    sub = commands.add_parser("jobs", help="list jobs, or describe one with --job-id")
    sub.add_argument("--job-id")
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")
    sub.set_defaults(build=cmd_jobs)


def _add_stream_snapshot_commands(commands: Subparsers) -> None:
    text = "ask every partition of a stream for a snapshot at its next generation"
    sub = commands.add_parser("stream-snapshot", help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("--partitions", type=_partition_list, required=True, help="e.g. 0,1,2,3")
    sub.add_argument(
        "--min-lsn",
        type=_partition_lsn,
        action="append",
        metavar="PARTITION=LSN",
        help="a partition's snapshot counts only at or above this LSN (repeatable)",
    )
    sub.add_argument("--deadline-minutes", type=int, help="how long members have (default 30)")
    sub.add_argument("--by", help="who asks (recorded in its event)")
    sub.add_argument("--request-id", help="repeat it to make the request idempotent")
    sub.set_defaults(build=cmd_stream_snapshot)
    text = "a stream snapshot and its members (the newest without GENERATION)"
    sub = commands.add_parser("generation", help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("generation", type=int, nargs="?")
    sub.set_defaults(build=cmd_generation)
    text = "a stream's snapshots by generation, newest first"
    sub = commands.add_parser("generations", help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")
    sub.set_defaults(build=cmd_generations)
    text = "restore a whole stream to a completed generation, in one job"
    sub = commands.add_parser("restore-stream", help=text, description=text)
    sub.add_argument("stream")
    sub.add_argument("--generation", type=int, required=True)
    sub.add_argument("--partitions", type=_partition_list, help="default: every member")
    sub.add_argument(
        "--target-lsn",
        type=_partition_lsn,
        action="append",
        metavar="PARTITION=LSN",
        help="restore this partition to this LSN (repeatable; default: its changelog's end)",
    )
    sub.add_argument("--request-id")
    sub.set_defaults(build=cmd_restore_stream)


def _add_retention_commands(commands: Subparsers) -> None:
    sub = commands.add_parser("gc", help="run garbage collection (or plan it with --dry-run)")
    sub.add_argument("--dry-run", action="store_true")
    sub.add_argument("--stream")
    sub.set_defaults(build=cmd_gc)
    text = "keep a snapshot until released (or expired)"
    sub = _lineage_command(commands, "hold", cmd_hold, text)
    sub.add_argument("snapshot_id")
    sub.add_argument("--expires-in-hours", type=float)
    sub.add_argument("--reason")
    sub.add_argument("--by")
    sub = _lineage_command(commands, "release", cmd_release, "release an operator's hold")
    sub.add_argument("snapshot_id")
    sub.add_argument("--hold-id")
    sub = commands.add_parser("policy", help="a stream's retention policy")
    policy = sub.add_subparsers(dest="policy_command", required=True)
    get = policy.add_parser("get")
    get.add_argument("stream")
    put = policy.add_parser("set", help="change the given fields of the stream's own policy")
    put.add_argument("--min-count", type=int)
    put.add_argument("--min-age-hours", type=float)
    put.add_argument("--max-count", type=int)
    put.add_argument("--max-age-hours", type=float)
    put.add_argument(
        "--min-generations",
        type=int,
        help="keep the members of the newest N completed stream snapshots",
    )
    reset = policy.add_parser("reset", help="remove the stream's own policy: the default applies")
    for change in (put, reset):
        change.add_argument("stream")
        change.add_argument("--by", help="who makes the change (recorded in its event)")
        change.add_argument(
            "--expected-version",
            type=_non_negative,
            help="refuse unless the policy is at this version (from policy get; 0: the default)",
        )
        change.add_argument("--request-id", help="repeat it to make the change idempotent")
    sub.set_defaults(build=cmd_policy)


def _transport(args: argparse.Namespace) -> Transport:
    if args.local:
        from snapledger.local.transport import LocalTransport

        return LocalTransport.open(args.home)
    return AwsTransport(stack_name=args.stack, region=args.region)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "local":
        from snapledger.local.up import run_local_up

        return run_local_up(home=args.home, poll_seconds=args.poll_seconds)
    try:
        transport = _transport(args)
        client = Snapledger(transport, close=getattr(transport, "close", None))
        with client:
            answer = args.build(client, args)
    except RequestRefusedError as refused:
        answer = refused.answer
    except SnapledgerError as exc:
        print(f"snapledger: {exc}", file=sys.stderr)
        return 2
    print(render(answer, as_json=args.json))
    return 0 if answer.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
