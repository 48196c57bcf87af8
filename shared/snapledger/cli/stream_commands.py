"""``snapledger stream-snapshot``, ``generation`` and ``generations``: a stream's snapshots
by generation.
"""

from __future__ import annotations

import click

from snapledger.cli.app import CURSOR, LIMIT, REQUEST_ID, STREAM, answer_of, cli, json_option
from snapledger.cli.console_map import sends
from snapledger.cli.job_commands import REQUIRED_PARTITIONS
from snapledger.cli.params import NON_NEGATIVE, PARTITION_LSN
from snapledger.client.control import Answer, Snapledger


@sends("snapshot_stream")
@cli.command("stream-snapshot")
@STREAM
@REQUIRED_PARTITIONS
@click.option(
    "--min-lsn",
    type=PARTITION_LSN,
    multiple=True,
    help="A partition's snapshot counts only at or above this LSN (repeatable).",
)
@click.option(
    "--deadline-minutes", type=click.IntRange(min=1), help="How long members have (default 30)."
)
@click.option("--by", help="Who asks (recorded in its event).")
@REQUEST_ID
@json_option
@answer_of
def stream_snapshot(
    client: Snapledger,
    *,
    stream: str,
    partitions: list[int],
    min_lsn: tuple[tuple[int, int], ...],
    deadline_minutes: int | None,
    by: str | None,
    request_id: str | None,
) -> Answer:
    """Ask every partition of a stream for a snapshot at its next generation."""
    return client.request_stream_snapshot(
        stream,
        partitions,
        min_lsn=dict(min_lsn),
        deadline_minutes=deadline_minutes,
        by=by,
        request_id=request_id,
    )


@sends("generation")
@cli.command()
@STREAM
@click.argument("generation", type=NON_NEGATIVE, required=False)
@json_option
@answer_of
def generation(client: Snapledger, stream: str, generation: int | None) -> Answer:
    """A stream snapshot and its members (the newest without GENERATION)."""
    return client.generation(stream, generation)


@sends("generations")
@cli.command()
@STREAM
@LIMIT
@CURSOR
@json_option
@answer_of
def generations(client: Snapledger, stream: str, limit: int | None, cursor: str | None) -> Answer:
    """A stream's snapshots by generation, newest first."""
    return client.generations(stream, limit=limit, cursor=cursor)
