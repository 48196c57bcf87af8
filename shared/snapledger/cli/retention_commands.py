"""``snapledger gc``, ``hold``, ``release`` and ``policy``: what GC keeps and deletes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from snapledger.cli import confirm, pictures
from snapledger.cli.app import (
    BY,
    NOT_CONFIRMED,
    PARTITION,
    REFUSED,
    REQUEST_ID,
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
from snapledger.cli.console_map import sends
from snapledger.cli.params import NON_NEGATIVE, SNAPSHOT_ID, STREAM_NAME
from snapledger.cli.picture_commands import PICTURE, _check_picture
from snapledger.cli.policy_options import policy_options
from snapledger.cli.render import make_console, render
from snapledger.client.control import Answer, Snapledger
from snapledger.limits import MAX_HOLD_HOURS


@cli.command()
@click.option("--dry-run", is_flag=True, help="Only show the plan: what would be kept and why.")
@click.option("--stream", type=STREAM_NAME, help="Only this stream (default: every stream).")
@PICTURE
@YES
@json_option
def gc(dry_run: bool, stream: str | None, plot: str | None, yes: bool) -> int:
    """Run garbage collection: shows the plan and asks first (or only plan it, --dry-run)."""
    if plot is not None and not dry_run:
        raise click.BadParameter("draws a plan: give it with --dry-run", param_hint="--plot")
    _check_picture(plot)
    if not dry_run:
        confirm.require_consent(yes, "gc")
    return _gc(dry_run=dry_run, stream=stream, yes=yes, plot=plot)


@uses_registry
def _gc(
    client: Snapledger,
    options: Options,
    *,
    dry_run: bool,
    stream: str | None,
    yes: bool,
    plot: str | None = None,
) -> int:
    if plot is not None:
        plan = _call(lambda: client.gc_plan(stream))
        status = _show(plan, options)
        if plan.get("ok", True):
            written = pictures.write(pictures.gc_plan(plan["report"]), plot, "GC plan")
            click.echo(f"drew the plan to {written}", err=options.json)
        return status
    if dry_run or yes:
        request = client.gc_plan if dry_run else client.gc
        return _show(_call(lambda: request(stream)), options)
    plan = _call(lambda: client.gc_plan(stream))
    if not plan.get("ok", True):
        return _show(plan, options)
    make_console(stderr=options.json).print(render(plan))
    planned = plan["report"]["counts"].get("snapshots_planned_for_deletion", 0)
    if not confirm.ask(yes, f"Run GC now ({planned} snapshot(s) planned for deletion)?"):
        click.echo(NOT_CONFIRMED, err=True)
        return REFUSED
    return _show(_call(lambda: client.gc(stream)), options)


@cli.command()
@STREAM
@PARTITION
@click.argument("snapshot_id", type=SNAPSHOT_ID)
@click.option(
    "--expires-in-hours",
    type=click.FloatRange(min=0, min_open=True, max=MAX_HOLD_HOURS),
    help="Release by itself after this many hours.",
)
@click.option("--reason", help="Why it is kept (shown with the hold).")
@BY
@json_option
@answer_of
def hold(
    client: Snapledger,
    *,
    stream: str,
    partition: int,
    snapshot_id: str,
    expires_in_hours: float | None,
    reason: str | None,
    by: str | None,
) -> Answer:
    """Keep a snapshot from GC until released (or expired)."""
    expires = None if expires_in_hours is None else timedelta(hours=expires_in_hours)
    return client.hold(stream, partition, snapshot_id, expires_in=expires, reason=reason, by=by)


@cli.command()
@STREAM
@PARTITION
@click.argument("snapshot_id", type=SNAPSHOT_ID)
@click.option("--hold-id", help="Release this hold only (default: the operator's hold).")
@YES
@json_option
def release(stream: str, partition: int, snapshot_id: str, hold_id: str | None, yes: bool) -> int:
    """Release an operator's hold: GC may then delete the snapshot (asks first)."""
    confirm.require_consent(yes, "release")
    if not confirm.ask(
        yes, f"Release the hold on {stream}/{partition} {snapshot_id}? GC may then delete it"
    ):
        click.echo(NOT_CONFIRMED, err=True)
        return REFUSED
    return _release(stream=stream, partition=partition, snapshot_id=snapshot_id, hold_id=hold_id)


@answer_of
def _release(
    client: Snapledger, *, stream: str, partition: int, snapshot_id: str, hold_id: str | None
) -> Answer:
    return client.release(stream, partition, snapshot_id, hold_id=hold_id)


@cli.group()
@json_option
def policy() -> None:
    """A stream's retention policy: get, set, reset."""


EXPECTED_VERSION = click.option(
    "--expected-version",
    type=NON_NEGATIVE,
    help="Refuse unless the policy is at this version (from policy get; 0: the default).",
)


@sends("policy_get")
@policy.command("get")
@STREAM
@json_option
@answer_of
def policy_get(client: Snapledger, stream: str) -> Answer:
    """The stream's policy in force, and where it comes from."""
    return client.policy(stream)


@policy.command("set")
@STREAM
@policy_options
@BY
@EXPECTED_VERSION
@REQUEST_ID
@YES
@json_option
@uses_registry
def policy_set(
    client: Snapledger,
    options: Options,
    *,
    stream: str,
    by: str | None,
    expected_version: int | None,
    request_id: str | None,
    yes: bool,
    **fields: Any,
) -> int:
    """Change the given fields of the stream's own policy; asks first when that lowers
    retention (a floor lowered, a cap added or lowered)."""
    current = _call(lambda: client.policy(stream))
    if not current.get("ok", True):
        return _show(current, options)
    lowered = confirm.lowered_retention(current.get("policy") or {}, fields)
    if lowered:
        confirm.require_consent(yes, "policy set that lowers retention")
        make_console(stderr=True).print("lowers retention:\n  " + "\n  ".join(lowered))
        if not confirm.ask(yes, f"Lower {stream}'s retention (GC may then delete more)?"):
            click.echo(NOT_CONFIRMED, err=True)
            return REFUSED
    answer = _call(
        lambda: client.set_policy(
            stream, by=by, expected_version=expected_version, request_id=request_id, **fields
        )
    )
    return _show(answer, options)


@policy.command("reset")
@STREAM
@BY
@EXPECTED_VERSION
@REQUEST_ID
@json_option
@answer_of
def policy_reset(
    client: Snapledger,
    stream: str,
    by: str | None,
    expected_version: int | None,
    request_id: str | None,
) -> Answer:
    """Remove the stream's own policy: the configured default applies."""
    return client.reset_policy(
        stream, by=by, expected_version=expected_version, request_id=request_id
    )
