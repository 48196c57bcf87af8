"""``policy set``'s options: one per retention policy field, as ``models/policy.py`` declares it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from snapledger.models.policy import POLICY_FIELDS, PolicyField

F = TypeVar("F", bound=Callable[..., Any])


def option_name(field: PolicyField) -> str:
    """``min_count`` -> ``--min-count``: the wire names match the CLI's."""
    return "--" + field.name.replace("_", "-")


def _policy_option(field: PolicyField) -> Callable[[F], F]:
    """Bounded above as the policy declares it (the gc function refuses what is below a
    floor, naming it); a switch is ``--x/--no-x``."""
    name = option_name(field)
    if field.kind is bool:
        return click.option(f"{name}/--no-{name[2:]}", default=None, help=field.bounds.help)
    cap = field.bounds.le
    kind = (
        click.IntRange(max=None if cap is None else int(cap))
        if field.kind is int
        else click.FloatRange(max=cap)
    )
    return click.option(name, type=kind, help=field.bounds.help)


def policy_options(f: F) -> F:
    """One option per retention policy field, in declaration order; each passed to the
    command as its field's name (``None``: not given)."""
    for field in reversed(POLICY_FIELDS):
        f = _policy_option(field)(f)
    return f
