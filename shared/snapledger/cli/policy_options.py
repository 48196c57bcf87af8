"""``policy set``'s options: one per retention policy field, as ``models/policy.py`` declares it.

Each number is checked against its field's whole ``Bounds`` (lower and upper) as click parses
it, so a value the gc function would refuse is refused before anything runs or asks (exit 2,
naming the option and the accepted range in words)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from snapledger.models.policy import POLICY_FIELDS, Bounds, PolicyField

F = TypeVar("F", bound=Callable[..., Any])


def option_name(field: PolicyField) -> str:
    """``min_count`` -> ``--min-count``: the wire names match the CLI's."""
    return "--" + field.name.replace("_", "-")


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}"


def accepted_range(whole: bool, bounds: Bounds, unit: str = "") -> str:
    """The values ``bounds`` accepts, in words: ``a whole number from 1 to 50``."""
    what = ("a whole number" if whole else "a number") + (f" of {unit}" if unit else "")
    low = bounds.gt if bounds.gt is not None else bounds.ge
    above = "above" if bounds.gt is not None else "from"
    if low is not None and bounds.le is not None:
        joined = "to" if above == "from" else "and at most"
        return f"{what} {above} {_number(low)} {joined} {_number(bounds.le)}"
    if low is not None:
        return f"{what} {above} {_number(low)}" + (" or more" if above == "from" else "")
    if bounds.le is not None:
        return f"{what} of at most {_number(bounds.le)}"
    return what


class PolicyNumber(click.ParamType):
    """A policy field's number within its declared ``Bounds``, refused in words past them."""

    def __init__(self, field: PolicyField) -> None:
        self._whole = field.kind is int
        self._bounds = field.bounds
        unit = "hours" if field.name.endswith("_hours") else ""
        self.name = "HOURS" if unit else "N"
        self.accepted = accepted_range(self._whole, field.bounds, unit)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | float:
        try:
            number = int(value) if self._whole else float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not {self.accepted}", param, ctx)
        b = self._bounds
        if (
            not math.isfinite(number)
            or (b.ge is not None and number < b.ge)
            or (b.gt is not None and number <= b.gt)
            or (b.le is not None and number > b.le)
        ):
            self.fail(f"{value} is out of range: give {self.accepted}", param, ctx)
        return number


def _policy_option(field: PolicyField) -> Callable[[F], F]:
    """Bounded below and above as the policy declares it; a switch is ``--x/--no-x``."""
    name = option_name(field)
    if field.kind is bool:
        return click.option(f"{name}/--no-{name[2:]}", default=None, help=field.bounds.help)
    kind = PolicyNumber(field)
    return click.option(name, type=kind, help=f"{field.bounds.help} ({kind.accepted})")


def policy_options(f: F) -> F:
    """One option per retention policy field, in declaration order; each passed to the
    command as its field's name (``None``: not given)."""
    for field in reversed(POLICY_FIELDS):
        f = _policy_option(field)(f)
    return f
