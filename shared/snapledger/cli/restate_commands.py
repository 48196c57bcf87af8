"""``snapledger restate``: a Restate stream's latests healed, a partition restored from a
chosen snapshot (the gc function's ``restate_heal`` and ``restate_restore``; docs/console.md).

Registered on the ``snapledger`` group (``cli/app.py``) when ``cli/main.py`` imports it.
"""

from __future__ import annotations

import click

from snapledger.cli import confirm
from snapledger.cli.app import (
    NOT_CONFIRMED,
    REFUSED,
    STREAM,
    YES,
    Options,
    _call,
    _show,
    answer_of,
    cli,
    json_option,
    uses_registry,
)
from snapledger.cli.params import RESTATE_SNAPSHOT_ID, BoundedText
from snapledger.client.control import Answer, Snapledger
from snapledger.limits import MAX_PARTITION

#: The console's bounds of a restore's fields (entrypoints/restate_actions.py), checked
#: here before the question is asked.
MAX_REASON_CHARS, MAX_BY_CHARS, MAX_REQUEST_ID_CHARS = 512, 128, 120
PARTITION_NUMBER = click.IntRange(min=0, max=MAX_PARTITION)


@cli.group()
@json_option
def restate() -> None:
    """A Restate stream's snapshots: heal its latests, restore a partition from one."""


@restate.command("heal")
@STREAM
@click.option(
    "--partition",
    type=PARTITION_NUMBER,
    help="Only this partition (default: each one the registry has a snapshot of).",
)
@click.option("--dry-run", is_flag=True, help="Only say what it would do: nothing is written.")
@json_option
@answer_of
def heal(client: Snapledger, stream: str, partition: int | None, dry_run: bool) -> Answer:
    """Check the snapshot each partition's latest.json names; repoint a broken one to the
    newest healthy snapshot Restate retains (as each GC run does). Nothing is deleted.
    Every partition may take several calls (each bounded by the function's time): they
    are made until every partition is checked, and shown as one answer."""
    if partition is not None:
        return client.heal(stream, partition, dry_run=dry_run)
    return client.heal_all(stream, dry_run=dry_run)


@restate.command("restore")
@STREAM
@click.argument("partition", type=PARTITION_NUMBER)
@click.argument("snapshot_id", type=RESTATE_SNAPSHOT_ID)
@click.option(
    "--reason",
    required=True,
    type=BoundedText(MAX_REASON_CHARS, min_chars=1),
    help="Why (recorded with the repoint and the hold).",
)
@click.option(
    "--by",
    type=BoundedText(MAX_BY_CHARS, min_chars=1),
    help="Who restores (recorded; default: your user name).",
)
@click.option(
    "--request-id",
    type=BoundedText(MAX_REQUEST_ID_CHARS, min_chars=1),
    help="Name the restore; repeating it with the same id applies it once.",
)
@YES
@json_option
@uses_registry
def restore(
    client: Snapledger,
    options: Options,
    *,
    stream: str,
    partition: int,
    snapshot_id: str,
    reason: str,
    by: str | None,
    request_id: str | None,
    yes: bool,
) -> int:
    """Point a partition's latest.json at a snapshot Restate retains (asks first): the
    node restores from it when its partition store is next rebuilt, then replays the log
    after it, so the partition comes back to the same state, rebuilt from an older base: a
    recovery tool, not a rollback. The snapshot is held (release it when it may go)."""
    confirm.require_consent(yes, "restate restore")
    question = (
        f"Point {stream}/{partition}'s latest.json at {snapshot_id}? Restate restores the "
        "partition from it when its store is next rebuilt"
    )
    if not confirm.ask(yes, question):
        click.echo(NOT_CONFIRMED, err=True)
        return REFUSED
    answer = _call(
        lambda: client.restore_latest(
            stream, partition, snapshot_id, reason=reason, by=by, request_id=request_id
        )
    )
    return _show(answer, options)
