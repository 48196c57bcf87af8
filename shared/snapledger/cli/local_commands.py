"""``snapledger local up``: the long-running local runtime."""

from __future__ import annotations

import click

from snapledger.cli.app import Options, cli


@cli.group()
def local() -> None:
    """The long-running local runtime."""


@local.command("up")
@click.option(
    "--poll-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="How often the router looks for new files under the root.",
)
@click.option(
    "--s3-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve an S3 endpoint on 127.0.0.1:PORT (0: a free port) that a Restate node can "
    "write to; the object store moves there (in memory, as the ledger then).",
)
@click.option(
    "--layout",
    "layouts",
    multiple=True,
    metavar="KEY=LAYOUT[:STREAM]",
    help="An entry of the layout map (repeatable; besides SNAPLEDGER_LAYOUTS'): a stream's "
    "layout (totals-app-totals-changelog=kafka-streams) or a prefix's layout and stream "
    "(restate/cluster-a=restate:payments; needs --s3-port).",
)
@click.option(
    "--restate-prefix",
    "restate_prefixes",
    multiple=True,
    metavar="PREFIX=STREAM",
    help="Deprecated: --layout PREFIX=restate:STREAM.",
)
@click.option(
    "--kafka-streams-stream",
    "kafka_streams",
    multiple=True,
    metavar="TOPIC",
    help="Deprecated: --layout TOPIC=kafka-streams.",
)
@click.option(
    "--fluss",
    is_flag=True,
    help="Also run a Fluss 0.7 cluster (make setup installs it) whose remote.data.dir is the "
    "root; GC reads its ZooKeeper (give each table --layout kv/DB/TABLE-ID=fluss-kv:STREAM).",
)
@click.option(
    "--fluss-snapshot-interval",
    "fluss_snapshot_interval_s",
    type=click.IntRange(1, 86_400),
    default=10,
    show_default=True,
    help="Fluss's kv.snapshot.interval, in seconds.",
)
@click.pass_context
def local_up(  # noqa: PLR0917 - click passes each option by keyword
    ctx: click.Context,
    poll_seconds: float,
    s3_port: int | None,
    layouts: tuple[str, ...],
    restate_prefixes: tuple[str, ...],
    kafka_streams: tuple[str, ...],
    fluss: bool,
    fluss_snapshot_interval_s: int,
) -> int:
    """Run DynamoDB Local, the router and local Spark until stopped (Ctrl-C)."""
    from snapledger.local.up import run_local_up

    return run_local_up(
        home=ctx.ensure_object(Options).home,
        poll_seconds=poll_seconds,
        s3_port=s3_port,
        layouts=layouts,
        restate_prefixes=restate_prefixes,
        kafka_streams=kafka_streams,
        fluss=fluss,
        fluss_snapshot_interval_s=fluss_snapshot_interval_s,
    )
