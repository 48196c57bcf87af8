"""A stream's retention policy, as stored in the ledger and set from the console or CLI.

The rule (docs/retention.md): a REGISTERED snapshot may be deleted only if it is not the
latest, not among the newest ``min_count``, older than ``min_age`` (registry time), has
no pin and no live hold, and is not a member of one of the newest ``min_generations``
completed stream snapshots (nor of an open one). The optional caps ``max_count`` and
``max_age`` only ever choose among the snapshots those protections leave; with no cap
configured every unprotected snapshot is deleted.

Durations are hours (floats) on the wire, the unit the CLI and the console use, at most
``limits.MAX_HOURS`` (100 years). A policy that arrives (``parse_policy``: the console, the
CLI, the client, the configured default) is refused past that bound with the field named.
A policy *read back* (the POLICY item, a ``PolicySet`` event) that was stored before the
bound existed is clamped to it, with a note (``RetentionPolicy.clamped``): 100 years is
longer than any snapshot can have been registered, so the clamp keeps and deletes exactly
what the stored value did, and GC, the stream's log and its history still read it.

**Each field is declared once, here**, on ``RetentionPolicy``, with its ``Bounds``: what a
request may give it and which change of it lets GC delete more. ``POLICY_FIELDS`` reads that
declaration, and every surface is derived from it: the console's ``policy_set`` payload
(``request_fields``, entrypoints/retention_actions.py), ``GcConfig``'s ``default_*`` settings
(``default_fields``, gc_settings.py), the client's ``set_policy`` keywords
(client/retention_actions.py) and the CLI's ``policy set`` options (cli/policy_options.py),
which asks first when a change lowers retention (cli/confirm.py), and ``policy_problems``,
which refuses a value past its ``Bounds`` with the reason they word. A new rule is a field
here (and a check in ``policy_problems`` only for a rule across fields), plus the code that
applies it.
"""

import math
import types
import typing
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_COUNT, MAX_HOURS
from snapledger.models.base import Frozen
from snapledger.models.generations import COMPLETED_GENERATIONS_KEPT

#: The apply step re-reads the newest ``min_count`` snapshots in the same consistent read
#: as the ones it expires (one BatchGetItem: at most 100 items), hence the ceiling.
MAX_MIN_COUNT = 50
#: How many completed stream snapshots GC can protect (what the stream's HEAD remembers).
MAX_MIN_GENERATIONS = COMPLETED_GENERATIONS_KEPT
#: ``parse_policy``'s validation context: a policy arriving at an edge is refused past a
#: bound, never clamped.
_ARRIVING = {"arriving": True}


@dataclass(frozen=True)
class Bounds:
    """A policy field's declaration beside its type and default: what a request may give it
    (``ge``/``gt``/``le``: the console's payload refuses past them naming the field, the
    CLI's option refuses past ``le``), and which change of it lets GC delete more:

    - ``floor``: it keeps at least this much, so lowering it deletes more;
    - ``cap``: it keeps at most this much (none: no cap), so adding or lowering it does;
    - ``switch``: it deletes something when on, so turning it on does.

    ``help`` is the CLI option's help. ``policy_problems`` refuses a policy past these same
    bounds, naming the field, with ``why_low`` / ``why_high`` saying what to do instead; it
    holds ``gt`` inclusive (a policy stored with it, through ``set_policy`` or the CLI, still
    reads), only the console's payload refuses it exclusive."""

    lowers: Literal["floor", "cap", "switch"]
    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    why_low: str = ""
    why_high: str = ""

    @property
    def cap(self) -> bool:
        """Whether the field is a cap: None (the default) selects nothing."""
        return self.lowers == "cap"

    @property
    def low(self) -> float | None:
        """The lowest value a policy holds (``ge``, else ``gt`` inclusive; None: no floor)."""
        return self.ge if self.ge is not None else self.gt


class RetentionPolicy(Frozen):
    """What GC keeps of a stream's snapshots; the defaults are the configured ones."""

    min_count: Annotated[
        int,
        Bounds(
            "floor",
            "Keep at least this many newest snapshots.",
            ge=1,
            le=MAX_MIN_COUNT,
            why_low="the newest snapshot is always kept",
            why_high="keep more with max_count, a longer min_age_hours, or holds",
        ),
    ] = Field(default=3, strict=True, description="The newest N REGISTERED are always kept")
    min_age_hours: Annotated[
        float, Bounds("floor", "Keep every snapshot younger than this.", ge=0, le=MAX_HOURS)
    ] = Field(default=24.0, description="Younger (registry time) are kept")
    max_count: Annotated[
        int | None,
        Bounds("cap", "Keep at most this many (a cap; floors win).", ge=1, le=MAX_COUNT),
    ] = Field(
        default=None,
        strict=True,
        description="Cap: unprotected snapshots beyond the newest N kept go",
    )
    max_age_hours: Annotated[
        float | None, Bounds("cap", "Delete what is older than this (a cap).", gt=0, le=MAX_HOURS)
    ] = Field(default=None, description="Cap: unprotected snapshots older than this go")
    delete_changelog_below_trim: Annotated[
        bool, Bounds("switch", "Also delete changelog segments wholly below the trim point.")
    ] = Field(
        default=False, description="Also delete changelog segments wholly below the trim point"
    )
    min_generations: Annotated[
        int,
        Bounds(
            "floor",
            "Keep the members of the newest N completed stream snapshots.",
            ge=0,
            le=MAX_MIN_GENERATIONS,
            why_high="the stream's HEAD remembers that many completed generations",
        ),
    ] = Field(
        default=1,
        strict=True,
        description="The members of the newest N completed stream snapshots are kept",
    )

    #: The notes of a stored policy clamped to the bounds as it was read (empty: none).
    _clamped: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _stored_within_bounds(
        cls, data: Any, handler: ModelWrapValidatorHandler["RetentionPolicy"], info: ValidationInfo
    ) -> "RetentionPolicy":
        """A policy read back with a duration past ``MAX_HOURS`` (stored before the bound
        existed) is clamped to it, noted; one arriving (``parse_policy``) is refused."""
        arriving = bool(info.context and info.context.get("arriving"))
        notes: list[str] = []
        if isinstance(data, dict) and not arriving:
            data = dict(data)
            for name, bound in STORED_BOUNDS.items():
                value = data.get(name)
                if isinstance(value, int | float) and math.isfinite(value) and value > bound:
                    notes.append(
                        f"{name} {value:g} is past its bound {bound:g}, which applies instead "
                        "(set the policy again to store a value within it)"
                    )
                    data[name] = int(bound) if name == "max_count" else bound
        policy = handler(data)
        if notes:
            policy._clamped = tuple(notes)
        return policy

    @property
    def clamped(self) -> tuple[str, ...]:
        """Why this policy, as read back, differs from what was stored (empty: it does not)."""
        return self._clamped

    @model_validator(mode="after")
    def _coherent(self) -> "RetentionPolicy":
        problems = policy_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def min_age(self) -> timedelta:
        return timedelta(hours=self.min_age_hours)

    @property
    def max_age(self) -> timedelta | None:
        return None if self.max_age_hours is None else timedelta(hours=self.max_age_hours)

    @property
    def has_caps(self) -> bool:
        """Whether any cap (a field declared with ``Bounds("cap", ...)``) is configured."""
        return any(getattr(self, f.name) is not None for f in POLICY_FIELDS if f.bounds.cap)


@dataclass(frozen=True)
class PolicyField:
    """One field of ``RetentionPolicy`` as declared: its name, value type (``int``,
    ``float`` or ``bool``), whether it may be ``None`` (a cap: none), default and bounds."""

    name: str
    kind: type
    nullable: bool
    default: Any
    bounds: Bounds

    @property
    def annotation(self) -> Any:
        """The field's type as the policy declares it (``int | None`` for a cap)."""
        return self.kind | None if self.nullable else self.kind


def _declared(model: type[RetentionPolicy]) -> tuple[PolicyField, ...]:
    fields = []
    for name, info in model.model_fields.items():
        bounds = [m for m in info.metadata if isinstance(m, Bounds)]
        kinds = [a for a in typing.get_args(info.annotation) if a is not type(None)]
        nullable = isinstance(info.annotation, types.UnionType) and len(kinds) == 1
        kind = kinds[0] if nullable else info.annotation
        if len(bounds) != 1 or kind not in (int, float, bool):
            raise TypeError(
                f"RetentionPolicy.{name} must be declared as int, float or bool (or one of them "
                "| None) with one Bounds(...) in its Annotated metadata"
            )
        fields.append(PolicyField(name, kind, nullable, info.default, bounds[0]))
    return tuple(fields)


#: Every policy field, in declaration order: what each surface that sets a policy derives
#: its fields from.
POLICY_FIELDS = _declared(RetentionPolicy)
#: The policy's durations, in hours; each is at most ``MAX_HOURS``.
HOUR_FIELDS = tuple(f.name for f in POLICY_FIELDS if f.kind is float)
#: The upper bound of each field that had none before ``limits.py`` (a policy read back
#: past one is clamped to it; ``min_count`` and ``min_generations`` were always bounded).
STORED_BOUNDS: dict[str, float] = {**dict.fromkeys(HOUR_FIELDS, MAX_HOURS), "max_count": MAX_COUNT}


def request_fields() -> dict[str, Any]:
    """The fields of a request that changes a policy (the console's ``policy_set``), for
    ``pydantic.create_model``: each optional (omitted: keeps its value) and within its
    ``Bounds``; a duration is any finite number (an integer too)."""
    fields: dict[str, Any] = {}
    for f in POLICY_FIELDS:
        b = f.bounds
        lax: dict[str, Any] = {"allow_inf_nan": False, "strict": False} if f.kind is float else {}
        fields[f.name] = (f.kind | None, Field(default=None, ge=b.ge, gt=b.gt, le=b.le, **lax))
    return fields


def default_fields(prefix: str = "default_") -> dict[str, Any]:
    """The configured default policy's fields (``GcConfig``'s ``default_*``), for
    ``pydantic.create_model``: each with the policy's own type and default, read from
    settings (so not strict: ``SNAPLEDGER_DEFAULT_MIN_COUNT=5`` is a string)."""
    return {prefix + f.name: (f.annotation, f.default) for f in POLICY_FIELDS}


def policy_problems(policy: RetentionPolicy) -> list[str]:
    """Every reason ``policy`` is refused, each saying what to do instead: a field past its
    declared ``Bounds`` (read from ``POLICY_FIELDS``), then the rules across fields."""
    problems = [p for f in POLICY_FIELDS if (p := _bound_problem(f, getattr(policy, f.name)))]
    if policy.max_count is not None and policy.max_count < policy.min_count:
        problems.append(
            f"max_count ({policy.max_count}) is below min_count ({policy.min_count}): the "
            "newest min_count are always kept, so raise max_count or lower min_count"
        )
    if (
        policy.max_age_hours is not None
        and math.isfinite(policy.max_age_hours)
        and policy.max_age_hours < policy.min_age_hours
    ):
        problems.append(
            f"max_age_hours ({policy.max_age_hours:g}) is below min_age_hours "
            f"({policy.min_age_hours:g}): snapshots younger than min_age are always kept, so "
            "raise max_age_hours or lower min_age_hours"
        )
    return problems


def _bound_problem(field: PolicyField, value: object) -> str | None:
    """Why ``value`` is past ``field``'s declared bounds (None: it is within them)."""
    b, name = field.bounds, field.name
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if field.kind is float:
        low = 0 if b.low is None else b.low
        if math.isfinite(value) and low <= value and (b.le is None or value <= b.le):
            return None
        most = "" if b.le is None else f" and at most {_shown(b.le)}"
        return f"{name} must be a finite number of hours >= {_shown(low)}{most} (got {value:g})"
    if b.low is not None and value < b.low:
        return f"{name} must be at least {_shown(b.low)} (got {value})" + _why(b.why_low)
    if b.le is not None and value > b.le:
        return f"{name} may be at most {_shown(b.le)} (got {value})" + _why(b.why_high)
    return None


def _shown(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _why(text: str) -> str:
    return f": {text}" if text else ""


def parse_policy(values: dict[str, object]) -> RetentionPolicy:
    """A policy from a payload, or InvalidRequestError listing every problem in words."""
    try:
        return RetentionPolicy.model_validate(values, context=_ARRIVING)
    except ValidationError as exc:
        messages = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            text = str(error["msg"]).removeprefix("Value error, ")
            messages.append(f"{where}: {text}" if where else text)
        raise InvalidRequestError(
            f"the retention policy is refused: {'; '.join(messages)}"
        ) from exc


class StoredPolicy(Frozen):
    """The ``STREAM#{stream}`` / ``POLICY`` item: a stream's policy and who set it when."""

    stream: str
    policy: RetentionPolicy
    version: int = Field(ge=1, description="Bumped on every change; writes are conditioned on it")
    updated_at: datetime
    updated_by: str = ""
