"""``snapledger producer-offsets register|get|delete``: the producer-offsets registry (the
launch function's ``producer_offsets_register`` / ``producer_offsets_delete`` and the query
function's ``producer_offsets``; docs/fluss.md, docs/console.md).

Registered on the ``snapledger`` group (``cli/app.py``) when ``cli/main.py`` imports it.
"""

from __future__ import annotations

import re
from typing import Any

import click

from snapledger.cli.app import answer_of, cli, json_option
from snapledger.cli.console_map import sends
from snapledger.cli.params import Matching
from snapledger.client.control import Answer, Snapledger
from snapledger.client.producer_offsets_actions import TableBucket
from snapledger.limits import (
    MAX_PRODUCER_ID_CHARS,
    MAX_PRODUCER_OFFSETS,
    MAX_PRODUCER_OFFSETS_TTL_SECONDS,
)
from snapledger.models.producer_offsets import MIN_TTL_SECONDS, PRODUCER_ID_PATTERN


class ProducerIdParam(Matching):
    """A producer id: the pattern, and at most ``MAX_PRODUCER_ID_CHARS`` characters."""

    def __init__(self) -> None:
        what = f"a producer id: 1 to {MAX_PRODUCER_ID_CHARS} letters, digits and . _ : -"
        super().__init__("PRODUCER_ID", PRODUCER_ID_PATTERN, what)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if len(str(value)) > MAX_PRODUCER_ID_CHARS:
            self.fail(
                f"has {len(str(value))} characters: a producer id has at most "
                f"{MAX_PRODUCER_ID_CHARS}",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


PRODUCER_ID = click.argument("producer_id", type=ProducerIdParam())
_OFFSET = re.compile(r"^(\d+)/(?:(\d+)/)?(\d+)=(\d+)$")


class BucketOffsetParam(click.ParamType):
    """``TABLE/BUCKET=OFFSET`` or ``TABLE/PARTITION/BUCKET=OFFSET`` (Fluss's ids)."""

    name = "TABLE/[PARTITION/]BUCKET=OFFSET"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[TableBucket, int]:
        if isinstance(value, tuple):
            return value
        match = _OFFSET.fullmatch(str(value))
        if match is None:
            self.fail(
                f"{value!r} is not TABLE/BUCKET=OFFSET or TABLE/PARTITION/BUCKET=OFFSET "
                "(non-negative integers, e.g. 3/0=952)",
                param,
                ctx,
            )
        table, partition, bucket, offset = match.groups()
        key: TableBucket = (
            (int(table), int(bucket))
            if partition is None
            else (int(table), int(partition), int(bucket))
        )
        return key, int(offset)


@cli.group("producer-offsets")
@json_option
def producer_offsets() -> None:
    """The producer-offsets registry (Fluss's): the offsets a job starts writing at,
    registered once, read after a failure before its first checkpoint, then deleted."""


@sends("producer_offsets_register")
@producer_offsets.command("register")
@PRODUCER_ID
@click.option(
    "--offset",
    "offsets",
    type=BucketOffsetParam(),
    multiple=True,
    required=True,
    help=f"A bucket's start offset, e.g. 3/0=952 (repeat it; 1 to {MAX_PRODUCER_OFFSETS}).",
)
@click.option(
    "--ttl-seconds",
    type=click.IntRange(MIN_TTL_SECONDS, MAX_PRODUCER_OFFSETS_TTL_SECONDS),
    help="Seconds until the entry expires (default 86400: 24 h; at most 30 days).",
)
@json_option
@answer_of
def register(
    client: Snapledger,
    producer_id: str,
    offsets: tuple[tuple[TableBucket, int], ...],
    ttl_seconds: int | None,
) -> Answer:
    """Register PRODUCER_ID's start offsets: CREATED, or ALREADY_EXISTS with the live
    entry that stands (an expired one is replaced)."""
    buckets = [bucket for bucket, _ in offsets]
    if len(set(buckets)) != len(buckets):
        twice = next(b for b in buckets if buckets.count(b) > 1)
        raise click.BadParameter(
            f"bucket {twice} is given twice: one offset each", param_hint="--offset"
        )
    return client.register_producer_offsets(producer_id, dict(offsets), ttl_seconds=ttl_seconds)


@sends("producer_offsets")
@producer_offsets.command("get")
@PRODUCER_ID
@json_option
@answer_of
def get(client: Snapledger, producer_id: str) -> Answer:
    """PRODUCER_ID's live entry (found: false when none is registered or it expired)."""
    return client.producer_offsets(producer_id)


@sends("producer_offsets_delete")
@producer_offsets.command("delete")
@PRODUCER_ID
@json_option
@answer_of
def delete(client: Snapledger, producer_id: str) -> Answer:
    """Delete PRODUCER_ID's entry (after its first checkpoint)."""
    return client.delete_producer_offsets(producer_id)
