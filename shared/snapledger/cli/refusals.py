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

from snapledger.cli.console_map import as_command
from snapledger.cli.params import BASE_FORMS, PATTERN_WORDS


def render_refusal(answer: dict[str, Any]) -> RenderableType:
    message = str(answer.get("message", ""))
    fields = readable_fields(answer.get("fields") or [])
    if fields:  # the message lists them again, the raw way: its first clause only
        message = message.split(": ", 1)[0]
    typed = click.get_current_context(silent=True)
    if typed is not None:  # in the words of the command the user typed, not the payload's
        message = _in_cli_syntax(answer, message, typed)
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


def _in_cli_syntax(answer: dict[str, Any], message: str, typed: click.Context) -> str:
    """A validation refusal as the command's own; a payload the message suggests sending
    (``suggestion``) written as the command that sends it."""
    if answer.get("error") == "validation":
        return f"`{typed.command_path}` refused its arguments"
    suggestion = answer.get("suggestion") or {}
    command = as_command(typed.find_root(), suggestion.get("payload") or {})
    if command is None or not suggestion.get("text"):
        return message
    return message.replace(suggestion["text"], f"`{command}`")


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
