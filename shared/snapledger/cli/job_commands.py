"""``snapledger bootstrap``, ``restore``, ``restore-stream`` and ``jobs``: launch a job and
follow it to its end, list jobs, describe or wait for one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from snapledger.cli.app import (
    ANSWERED,
    CURSOR,
    LIMIT,
    PARTITION,
    REQUEST_ID,
    STREAM,
    Options,
    _call,
    _show,
    answer_of,
    cli,
    json_option,
    uses_registry,
)
from snapledger.cli.console_map import sends
from snapledger.cli.params import BASE_FORMS, NON_NEGATIVE, PARTITION_LSN, PARTITIONS, TIME
from snapledger.cli.render import as_json, make_console, render
from snapledger.cli.waiting import wait_for_job
from snapledger.client.control import WAIT_TIMEOUT_SECONDS, Answer, Snapledger

WAIT = click.option(
    "--wait/--no-wait",
    default=None,
    help="Wait for the job and report how it ended (default: wait when stdout is a terminal).",
)
TIMEOUT = click.option(
    "--timeout-seconds",
    type=click.FloatRange(min=0),
    default=WAIT_TIMEOUT_SECONDS,
    show_default=True,
    help="How long to wait for the job.",
)

TARGET_LSN = click.option(
    "--target-lsn", type=NON_NEGATIVE, help="Up to this LSN (default: the changelog's end)."
)
REQUIRED_PARTITIONS = click.option(
    "--partitions", type=PARTITIONS, required=True, help="The partitions, e.g. 0,1,2,3."
)


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def launches_a_job(f: Callable[..., int]) -> Callable[..., int]:
    """The options of a command that launches a job, and its client."""
    for option in (uses_registry, json_option, TIMEOUT, WAIT, REQUEST_ID):
        f = option(f)
    return f


def _launched(
    client: Snapledger,
    options: Options,
    request: Callable[[], Answer],
    wait: bool | None,
    timeout: float,
) -> int:
    """Launch a job and, when waiting, follow it to its end: its final state, output
    location or failure reason; exit 1 unless it succeeded."""
    answer = _call(request)
    if wait is None:
        wait = stdout_is_terminal()
    if not answer.get("ok", True) or not wait:
        return _show(answer, options)
    if not options.json:
        make_console().print(render(answer))
    progress = make_console(stderr=options.json)
    job, status = wait_for_job(client, answer["job_id"], progress, timeout=timeout)
    if options.json:
        click.echo(as_json({**answer, "job": job}))
    return status


@sends("bootstrap")
@cli.command()
@STREAM
@REQUIRED_PARTITIONS
@TARGET_LSN
@launches_a_job
def bootstrap(
    client: Snapledger,
    options: Options,
    *,
    stream: str,
    partitions: list[int],
    target_lsn: int | None,
    request_id: str | None,
    wait: bool | None,
    timeout_seconds: float,
) -> int:
    """Build first snapshots from the changelog."""
    return _launched(
        client,
        options,
        lambda: client.bootstrap(stream, partitions, target_lsn=target_lsn, request_id=request_id),
        wait,
        timeout_seconds,
    )


@sends("restore")
@cli.command()
@STREAM
@PARTITION
@click.option("--snapshot-id", help="From this snapshot.")
@click.option(
    "--as-of-lsn", type=NON_NEGATIVE, help="From the newest snapshot at or below this LSN."
)
@click.option(
    "--as-of-time",
    type=TIME,
    help="From the newest snapshot registered by then (ISO-8601 with a timezone, "
    "e.g. 2026-05-01T12:00Z).",
)
@TARGET_LSN
@launches_a_job
def restore(
    client: Snapledger,
    options: Options,
    *,
    stream: str,
    partition: int,
    snapshot_id: str | None,
    as_of_lsn: int | None,
    as_of_time: str | None,
    target_lsn: int | None,
    request_id: str | None,
    wait: bool | None,
    timeout_seconds: float,
) -> int:
    """Restore a partition's state from a snapshot (the latest by default) + the changelog."""
    if sum(v is not None for v in (snapshot_id, as_of_lsn, as_of_time)) > 1:
        raise click.UsageError(f"choose one base: {BASE_FORMS}")
    return _launched(
        client,
        options,
        lambda: client.restore(
            stream,
            partition,
            snapshot_id=snapshot_id,
            as_of_lsn=as_of_lsn,
            as_of_time=as_of_time,
            target_lsn=target_lsn,
            request_id=request_id,
        ),
        wait,
        timeout_seconds,
    )


@cli.command("restore-stream")
@STREAM
@click.option("--generation", type=NON_NEGATIVE, required=True, help="A completed generation.")
@click.option(
    "--partitions", type=PARTITIONS, help="Only these partitions (default: every member)."
)
@click.option(
    "--target-lsn",
    type=PARTITION_LSN,
    multiple=True,
    help="Restore this partition to this LSN (repeatable; default: its changelog's end).",
)
@launches_a_job
def restore_stream(
    client: Snapledger,
    options: Options,
    *,
    stream: str,
    generation: int,
    partitions: list[int] | None,
    target_lsn: tuple[tuple[int, int], ...],
    request_id: str | None,
    wait: bool | None,
    timeout_seconds: float,
) -> int:
    """Restore a whole stream to a completed generation, in one job."""
    return _launched(
        client,
        options,
        lambda: client.restore_stream(
            stream,
            generation,
            partitions=partitions,
            target_lsns=dict(target_lsn) if target_lsn else None,
            request_id=request_id,
        ),
        wait,
        timeout_seconds,
    )


@sends("jobs")
@cli.group(invoke_without_command=True)
@click.option("--job-id", help="Describe this job (as `jobs show JOB_ID`).")
@LIMIT
@CURSOR
@json_option
@click.pass_context
def jobs(ctx: click.Context, job_id: str | None, limit: int | None, cursor: str | None) -> int:
    """List jobs; `jobs show JOB_ID` describes one, `jobs wait JOB_ID` waits for it."""
    if ctx.invoked_subcommand is not None:
        return ANSWERED
    if job_id is not None:
        return _show_job(job_id=job_id)
    return _list_jobs(limit=limit, cursor=cursor)


@answer_of
def _list_jobs(client: Snapledger, *, limit: int | None, cursor: str | None) -> Answer:
    return client.jobs(limit=limit, cursor=cursor)


@sends("job")
@jobs.command("show")
@click.argument("job_id")
@json_option
def show_job(job_id: str) -> int:
    """One job with its transitions."""
    return _show_job(job_id=job_id)


@answer_of
def _show_job(client: Snapledger, *, job_id: str) -> Answer:
    return client.job(job_id)


@jobs.command("wait")
@click.argument("job_id")
@TIMEOUT
@json_option
@uses_registry
def wait_job(client: Snapledger, options: Options, job_id: str, timeout_seconds: float) -> int:
    """Wait for a job to end: its final state, output location or failure reason
    (exit 1 unless it succeeded)."""
    found = _call(lambda: client.job(job_id))
    if not found.get("ok", True):
        return _show(found, options)
    job, status = wait_for_job(
        client, job_id, make_console(stderr=options.json), timeout=timeout_seconds
    )
    if options.json:
        click.echo(as_json({"ok": True, "job": job}))
    return status
