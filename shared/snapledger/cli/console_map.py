"""The console action ↔ CLI command map, one declaration per command: ``@sends("latest")``
on the command that sends that console action. A console payload an answer suggests
(``suggestion`` in a refusal) is written as the command that sends it, from the command's
own arguments and options."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import click

from snapledger.errors import SOME_PARTITIONS

C = TypeVar("C", bound=click.Command)
_ACTION = "console_action"
#: How the CLI writes a list its user fills in (``--partitions 0,1,...``).
_SOME = "0,1,..."


def sends(action: str) -> Callable[[C], C]:
    """Mark a command as the one that sends the console ``action``."""

    def mark(command: C) -> C:
        setattr(command, _ACTION, action)
        return command

    return mark


def action_commands(root: click.Command) -> dict[str, tuple[str, click.Command]]:
    """Each console action a command under ``root`` sends → that command's path and itself."""
    return {
        getattr(command, _ACTION): (path, command)
        for path, command in _walk(root, "")
        if getattr(command, _ACTION, None)
    }


def as_command(root: click.Context, payload: Mapping[str, Any]) -> str | None:
    """``payload`` as the command line that sends it (under the program ``root`` runs), or
    None if no command does."""
    found = action_commands(root.command).get(str(payload.get("action")))
    if found is None:
        return None
    path, command = found
    fields = {key: value for key, value in payload.items() if key != "action"}
    words = [root.info_name or "snapledger", *path.split()]
    for param in command.params:
        if isinstance(param, click.Argument) and param.name in fields:
            words.append(_value(fields.pop(param.name)))
    options = {p.name: max(p.opts, key=len) for p in command.params if isinstance(p, click.Option)}
    for key, value in fields.items():
        words += [options.get(key, "--" + key.replace("_", "-")), _value(value)]
    return " ".join(words)


def _value(value: object) -> str:
    if value == SOME_PARTITIONS:
        return _SOME
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _walk(sub, f"{path} {name}".strip())
