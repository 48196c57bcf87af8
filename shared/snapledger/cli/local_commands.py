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
    "--restate-prefix",
    "restate_prefixes",
    multiple=True,
    metavar="PREFIX=STREAM",
    help="A Restate cluster's snapshot prefix in that endpoint's bucket, and its stream "
    "name (repeatable; needs --s3-port).",
)
@click.option(
    "--kafka-streams-stream",
    "kafka_streams",
    multiple=True,
    metavar="TOPIC",
    help="A Kafka Streams changelog topic whose snapshots have the kafka-streams layout "
    "(repeatable; besides SNAPLEDGER_KAFKA_STREAMS_STREAMS').",
)
@click.pass_context
def local_up(
    ctx: click.Context,
    poll_seconds: float,
    s3_port: int | None,
    restate_prefixes: tuple[str, ...],
    kafka_streams: tuple[str, ...],
) -> int:
    """Run DynamoDB Local, the router and local Spark until stopped (Ctrl-C)."""
    from snapledger.local.up import run_local_up

    return run_local_up(
        home=ctx.ensure_object(Options).home,
        poll_seconds=poll_seconds,
        s3_port=s3_port,
        restate_prefixes=restate_prefixes,
        kafka_streams=kafka_streams,
    )
