"""``snapledger latest``, ``list`` and ``history``: a partition's HEAD, snapshots and events."""

from __future__ import annotations

import click

from snapledger.cli.app import CURSOR, LIMIT, PARTITION, STREAM, answer_of, cli, json_option
from snapledger.cli.console_map import sends
from snapledger.cli.params import NON_NEGATIVE
from snapledger.client.control import Answer, Snapledger


@sends("latest")
@cli.command()
@STREAM
@PARTITION
@json_option
@answer_of
def latest(client: Snapledger, stream: str, partition: int) -> Answer:
    """The latest snapshot of a partition (its HEAD)."""
    return client.latest(stream, partition)


@sends("list")
@cli.command("list")
@STREAM
@PARTITION
@LIMIT
@CURSOR
@json_option
@answer_of
def list_snapshots(
    client: Snapledger, stream: str, partition: int, limit: int | None, cursor: str | None
) -> Answer:
    """A partition's snapshots, newest first."""
    return client.snapshots(stream, partition, limit=limit, cursor=cursor)


@sends("history")
@cli.command()
@STREAM
@click.argument("partition", type=NON_NEGATIVE, required=False)
@click.option("--after-seq", type=NON_NEGATIVE, help="Only the events after this sequence number.")
@LIMIT
@CURSOR
@json_option
@answer_of
def history(
    client: Snapledger,
    *,
    stream: str,
    partition: int | None,
    after_seq: int | None,
    limit: int | None,
    cursor: str | None,
) -> Answer:
    """A partition's events in order; without PARTITION, the stream's (policy changes)."""
    return client.history(stream, partition, after_seq=after_seq, limit=limit, cursor=cursor)
