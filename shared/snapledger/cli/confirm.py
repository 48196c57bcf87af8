"""Destructive commands ask first: what lowers retention, and the question's rules."""

from __future__ import annotations

import sys
from typing import Any

import click

from snapledger.models.policy import POLICY_FIELDS


def _declared(lowers: str) -> tuple[str, ...]:
    return tuple(f.name for f in POLICY_FIELDS if f.bounds.lowers == lowers)


#: Floors: keeping fewer, or for less time, lowers retention.
FLOORS = _declared("floor")
#: Caps: adding one, or lowering it, lets GC delete what it kept before.
CAPS = _declared("cap")
#: Switches: turning one on lets GC delete what it kept before.
SWITCHES = _declared("switch")


def lowered_retention(current: dict[str, Any], change: dict[str, Any]) -> list[str]:
    """Each field of ``change`` that lets GC delete more than ``current`` does, as
    ``field: old → new`` (a floor lowered, a cap added or lowered, a switch turned on)."""
    lowered = []
    for field, new in change.items():
        if new is None:
            continue
        old = current.get(field)
        if field in FLOORS and old is not None and new < old:
            lowered.append(f"{field}: {old} → {new}")
        elif field in CAPS and (old is None or new < old):
            lowered.append(f"{field}: {'none' if old is None else old} → {new}")
        elif field in SWITCHES and new and not old:
            lowered.append(f"{field}: off → on")
    return lowered


def interactive() -> bool:
    """Whether a person can answer a question (stdin is a terminal)."""
    return sys.stdin.isatty()


def require_consent(yes: bool, what: str) -> None:
    """Before anything runs: without --yes, a script (no terminal) is refused (exit 2)."""
    if not yes and not interactive():
        raise click.UsageError(
            f"{what} asks before it changes anything, and no one can answer here: "
            "pass --yes to go ahead without asking"
        )


def ask(yes: bool, question: str) -> bool:
    """True when --yes was given or the person answers yes."""
    return yes or click.confirm(question, default=False, err=True)
