"""A refusal as the CLI's user reads it: in the words of the command they typed (its
options and arguments, not the payload's fields), each problem's accepted form in words
(not a regular expression), a union's failed branches as one line, and each console
payload a message suggests written as the CLI command."""

from __future__ import annotations

import re
from typing import Any

import click
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from snapledger.cli.params import BASE_FORMS, PATTERN_WORDS


def render_refusal(answer: dict[str, Any]) -> RenderableType:
    message = cli_syntax(str(answer.get("message", "")))
    fields = readable_fields(answer.get("fields") or [])
    if fields:  # the message lists them again, the raw way: its first clause only
        message = message.split(": ", 1)[0]
    typed = click.get_current_context(silent=True)
    if typed is not None:  # in the words of the command the user typed, not the payload's
        message = _NOT_VALID.sub(f"`{typed.command_path}` refused its arguments", message)
        labels = {p.name: _label(p) for p in typed.command.params if p.name}
        fields = [(labels.get(field, field), in_words(problem)) for field, problem in fields]
    head = Text(f"error ({answer.get('error', 'failed')}): ", style="bold red")
    head.append(message, style="default")
    if not fields:
        return head
    table = Table("field", "problem", box=None, pad_edge=False)
    for field, problem in fields:
        table.add_row(field, problem)
    return Group(head, table)


#: How a function's validation answer begins ("the gc request is not valid").
_NOT_VALID = re.compile(r"^the \w+ request is not valid")
_PATTERN = re.compile(r"String should match pattern '(?P<pattern>.*)'")


def _label(param: click.Parameter) -> str:
    """An option as typed (``--by``), an argument as help shows it (``SNAPSHOT_ID``)."""
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return param.human_readable_name


def in_words(problem: str) -> str:
    """A problem without a regular expression: the accepted form in words."""
    match = _PATTERN.search(problem)
    if match is None:
        return problem
    return "must be " + PATTERN_WORDS.get(match["pattern"], "in its accepted form")


#: The accepted forms of a field that is one of several shapes (a union), by its name.
ACCEPTED_FORMS = {"from": BASE_FORMS}
_UNION_BRANCH = re.compile(r"^(?:[A-Z]\w*|literal\[.*\])$")


def readable_fields(fields: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The fields at fault, one line each: a union's failed branches (``from.FromLsn.lsn``,
    ``from.literal['latest']``) become one line for the field, listing its accepted forms."""
    out: dict[str, str] = {}
    for entry in fields:
        field, problem = str(entry.get("field", "")), str(entry.get("problem", ""))
        parts = field.split(".")
        branch = next((i for i, p in enumerate(parts) if _UNION_BRANCH.match(p)), None)
        if branch is None:
            out.setdefault(field, problem)
            continue
        union = ".".join(parts[:branch])
        forms = ACCEPTED_FORMS.get(union, "one of its accepted forms")
        out.setdefault(union, f"not one of the accepted forms: {forms}")
    return list(out.items())


#: A console payload in a message, e.g. {"action": "jobs"}, and the CLI command it is.
_PAYLOAD = re.compile(r'\{"action": "(?P<action>\w+)"(?P<rest>[^{}]*)\}')
_PAIR = re.compile(r'"(?P<key>\w+)": (?P<value>"[^"]*"|\[[^\]]*\]|[^,}]+)')
_COMMANDS = {
    "jobs": "jobs",
    "job": "jobs show",
    "latest": "latest",
    "list": "list",
    "history": "history",
    "bootstrap": "bootstrap",
    "restore": "restore",
    "snapshot_stream": "stream-snapshot",
    "generation": "generation",
    "generations": "generations",
    "policy_get": "policy get",
}
_POSITIONAL = ("job_id", "stream", "partition", "generation")


def cli_syntax(message: str) -> str:
    """``message`` with each console payload it suggests written as the CLI command."""

    def command(match: re.Match[str]) -> str:
        name = _COMMANDS.get(match["action"])
        if name is None:
            return match[0]
        pairs = {m["key"]: m["value"].strip('"') for m in _PAIR.finditer(match["rest"])}
        words = ["snapledger", name, *(pairs.pop(k) for k in _POSITIONAL if k in pairs)]
        for key, value in pairs.items():
            shown = "0,1,..." if value == "[...]" else value.strip("[]").replace(" ", "")
            words += [f"--{key.replace('_', '-')}", shown]
        return "`" + " ".join(words) + "`"

    return _PAYLOAD.sub(command, message)
