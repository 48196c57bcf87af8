"""``snapledger``: latest, list, history, bootstrap, restore, jobs, gc, hold, release, policy,
stream snapshots (stream-snapshot, generation, generations, restore-stream) and Restate
streams (restate heal, restate restore: ``cli/restate_commands.py``).

A thin layer over the control client (``snapledger.client.control.Snapledger``): click
parses the arguments, the client sends the console's payloads, rich prints the answer.
Targets a deployment in AWS (found through the stack's outputs; ``--stack``, ``--region``)
or the local runtime (``--local``). Readable tables by default, ``--json`` (anywhere on the
line) for scripts. Exit status: 0 answered, 1 refused (the answer says why), a job that
did not succeed, or a question answered no; 2 bad arguments (the CLI's or the functions'
validation of them), a destructive command with no one to ask and no --yes, or the
deployment or local runtime could not be reached.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import click

from snapledger.cli import confirm, pictures
from snapledger.cli.params import (
    BASE_FORMS,
    NON_NEGATIVE,
    PARTITION_LSN,
    PARTITIONS,
    SNAPSHOT_ID,
    STREAM_NAME,
    TIME,
)
from snapledger.cli.policy_options import policy_options
from snapledger.cli.render import as_json, make_console, render
from snapledger.cli.waiting import wait_for_job
from snapledger.client.control import (
    WAIT_TIMEOUT_SECONDS,
    Answer,
    RequestRefusedError,
    Snapledger,
)
from snapledger.client.transport import STACK_NAME, AwsTransport, Transport
from snapledger.errors import SnapledgerError
from snapledger.limits import MAX_HOLD_HOURS

F = TypeVar("F", bound=Callable[..., Any])
#: Exit statuses, as README states them.
ANSWERED, REFUSED, BAD_ARGUMENTS = 0, 1, 2


@dataclass
class Options:
    """The options every command shares (given before the command; ``--json`` anywhere)."""

    local: bool = False
    home: str | None = None
    stack: str = STACK_NAME
    region: str | None = None
    json: bool = False
    function_logs: str | None = None


def _set_json(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Options).json = True


def json_option(f: F) -> F:
    """``--json`` on a command too, so it is accepted after the command as well as before."""
    return click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        callback=_set_json,
        help="Print the raw JSON answer (for scripts).",
    )(f)


def _transport(options: Options) -> Transport:
    if options.local:
        from snapledger.local.transport import LocalTransport

        return LocalTransport.open(options.home, function_logs=options.function_logs)
    return AwsTransport(stack_name=options.stack, region=options.region)


class _OnFirstUse:
    """The transport, opened by the first request (a command refused for its arguments
    never starts DynamoDB Local nor reads the stack)."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self._opened: Transport | None = None

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self._opened is None:
            self._opened = _transport(self._options)
        return self._opened.invoke(function, payload)

    def close(self) -> None:
        close = getattr(self._opened, "close", None)
        if close is not None:
            close()


def _call(request: Callable[[], Answer]) -> Answer:
    """The answer, a refusal included (``"ok": false``)."""
    try:
        return request()
    except RequestRefusedError as refused:
        return refused.answer


def _status(answer: Answer) -> int:
    if answer.get("ok", True):
        return ANSWERED
    # The functions' validation of what the CLI sent is a bad argument of the CLI's.
    return BAD_ARGUMENTS if answer.get("error") == "validation" else REFUSED


def _show(answer: Answer, options: Options) -> int:
    if options.json:
        click.echo(as_json(answer))
    else:
        make_console().print(render(answer))
    return _status(answer)


def uses_registry(f: Callable[..., int]) -> Callable[..., int]:
    """Run the command with a client (closed after); unreachable → a message and exit 2."""

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> int:
        options = click.get_current_context().ensure_object(Options)
        try:
            transport = _OnFirstUse(options)
            with Snapledger(transport, close=transport.close) as client:
                return f(client, options, *args, **kwargs)
        except SnapledgerError as exc:
            make_console(stderr=True).print(f"snapledger: {exc}", markup=False, highlight=False)
            return BAD_ARGUMENTS

    return run


def answer_of(request: Callable[..., Answer]) -> Callable[..., int]:
    """A command whose whole work is one request: its answer, printed."""

    @uses_registry
    @functools.wraps(request)
    def run(client: Snapledger, options: Options, *args: Any, **kwargs: Any) -> int:
        return _show(_call(lambda: request(client, *args, **kwargs)), options)

    return run


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--local", is_flag=True, help="Use the local runtime instead of a deployment.")
@click.option(
    "--home",
    metavar="DIR",
    help="The local runtime's folder (default .local/state); with --local and local up.",
)
@click.option(
    "--stack",
    default=STACK_NAME,
    show_default=True,
    help="The CloudFormation stack of the deployment.",
)
@click.option("--region", help="The AWS region of the stack (default: your AWS configuration).")
@click.option(
    "--function-logs",
    metavar="FILE",
    help="With --local: append the functions' logs to FILE, or - for stderr "
    "(default: functions.log in the local runtime's folder; never stdout).",
)
@json_option
@click.version_option(package_name="snapledger", prog_name="snapledger")
@click.pass_context
def cli(ctx: click.Context, /, **given: Any) -> None:
    """snapledger: the snapshot registry's CLI.

    Exit status: 0 answered; 1 refused, a job that did not succeed, or a question answered
    no; 2 bad arguments or unreachable.

    \b
    Shell completion (bash; zsh and fish alike, README says how):
    eval "$(_SNAPLEDGER_COMPLETE=bash_source snapledger)"
    """
    options = ctx.ensure_object(Options)
    for name, value in given.items():  # local, home, stack, region, function_logs
        setattr(options, name, value)


@cli.result_callback()
def _exit_status(status: int | None, **_: Any) -> None:
    """The command's status is the process's (click alone would exit 0 after any command)."""
    if status:
        raise click.exceptions.Exit(status)


STREAM = click.argument("stream", type=STREAM_NAME)
PARTITION = click.argument("partition", type=NON_NEGATIVE)
REQUEST_ID = click.option(
    "--request-id", help="Name the request; repeating it with the same id applies it once."
)
LIMIT = click.option("--limit", type=click.IntRange(min=1), help="At most this many per page.")
CURSOR = click.option("--cursor", help="The cursor of the previous page, for the next one.")
BY = click.option("--by", help="Who makes the change (recorded in its event).")
YES = click.option("--yes", "-y", is_flag=True, help="Go ahead without asking (for scripts).")


# -- queries ---------------------------------------------------------------------------------


@cli.command()
@STREAM
@PARTITION
@json_option
@answer_of
def latest(client: Snapledger, stream: str, partition: int) -> Answer:
    """The latest snapshot of a partition (its HEAD)."""
    return client.latest(stream, partition)


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


# -- jobs ------------------------------------------------------------------------------------

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


# -- stream snapshots ------------------------------------------------------------------------


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


@cli.command()
@STREAM
@click.argument("generation", type=NON_NEGATIVE, required=False)
@json_option
@answer_of
def generation(client: Snapledger, stream: str, generation: int | None) -> Answer:
    """A stream snapshot and its members (the newest without GENERATION)."""
    return client.generation(stream, generation)


@cli.command()
@STREAM
@LIMIT
@CURSOR
@json_option
@answer_of
def generations(client: Snapledger, stream: str, limit: int | None, cursor: str | None) -> Answer:
    """A stream's snapshots by generation, newest first."""
    return client.generations(stream, limit=limit, cursor=cursor)


# -- retention -------------------------------------------------------------------------------

NOT_CONFIRMED = "not confirmed: nothing changed"


PICTURE = click.option(
    "--plot",
    "-o",
    "plot",
    type=click.Path(dir_okay=False, writable=True),
    help="Also draw it to this file: .svg, or .html (an SVG in a page).",
)


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


def _check_picture(path: str | None) -> None:
    if path is not None and not path.lower().endswith(pictures.FORMATS):
        raise click.BadParameter(
            f"{path}: a picture is written as {' or '.join(pictures.FORMATS)}",
            param_hint="--plot",
        )


@cli.command()
@STREAM
@PARTITION
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="The picture: .svg, or .html (an SVG in a page).",
)
@json_option
def timeline(stream: str, partition: int, output: str) -> int:
    """Draw a partition's lineage: snapshots on an LSN axis over registry time, coloured by
    status, the latest, holds, pins, the trim point, and jobs as spans."""
    _check_picture(output)
    return _timeline(stream=stream, partition=partition, output=output)


@uses_registry
def _timeline(
    client: Snapledger, options: Options, *, stream: str, partition: int, output: str
) -> int:
    listed = _call(lambda: client.snapshots(stream, partition, limit=1000))
    latest = _call(lambda: client.latest(stream, partition))
    for answer in (listed, latest):
        if not answer.get("ok", True):
            return _show(answer, options)
    jobs = _call(lambda: client.jobs(limit=1000)).get("jobs", [])
    svg = pictures.timeline(stream, partition, listed.get("snapshots", []), latest["head"], jobs)
    written = pictures.write(svg, output, f"{stream}/{partition}")
    if options.json:
        click.echo(as_json({"ok": True, "picture": str(written)}))
    else:
        click.echo(f"drew {stream}/{partition} to {written}")
    return ANSWERED


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


# -- the local runtime -----------------------------------------------------------------------


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
@click.pass_context
def local_up(
    ctx: click.Context, poll_seconds: float, s3_port: int | None, restate_prefixes: tuple[str, ...]
) -> int:
    """Run DynamoDB Local, the router and local Spark until stopped (Ctrl-C)."""
    from snapledger.local.up import run_local_up

    return run_local_up(
        home=ctx.ensure_object(Options).home,
        poll_seconds=poll_seconds,
        s3_port=s3_port,
        restate_prefixes=restate_prefixes,
    )


# The command groups of their own modules, built on the options and helpers above.
from snapledger.cli import restate_commands  # noqa: E402, F401


def main(argv: list[str] | None = None) -> int:
    """The console script: the exit status (0 answered, 1 refused, 2 bad arguments or
    unreachable)."""
    try:
        status = cli.main(args=argv, prog_name="snapledger", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as bad:
        bad.show()
        return bad.exit_code
    except click.Abort:
        click.echo(NOT_CONFIRMED, err=True)
        return REFUSED
    return status if isinstance(status, int) else ANSWERED


if __name__ == "__main__":
    sys.exit(main())
