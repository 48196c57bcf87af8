"""The ``snapledger`` group and what its commands share: the global options, ``--json``
anywhere on the line, a client opened on first use (a deployment or ``--local``), the
answer printed as a table or JSON, and the exit statuses.

The commands live in modules by group (``cli/*_commands.py``), each registered on
``cli`` here; ``cli/main.py`` imports them all and is the console script.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from snapledger.cli.params import NON_NEGATIVE, STREAM_NAME
from snapledger.cli.render import as_json, make_console, render
from snapledger.client.control import Answer, RequestRefusedError, Snapledger
from snapledger.client.transport import AwsTransport, Transport
from snapledger.errors import SnapledgerError
from snapledger.stack_names import STACK_NAME

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
NOT_CONFIRMED = "not confirmed: nothing changed"
