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
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

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
#: The policy's durations, in hours; each is at most ``MAX_HOURS``.
HOUR_FIELDS = ("min_age_hours", "max_age_hours")
#: The upper bound of each field that had none before ``limits.py`` (a policy read back
#: past one is clamped to it; ``min_count`` and ``min_generations`` were always bounded).
STORED_BOUNDS: dict[str, float] = {**dict.fromkeys(HOUR_FIELDS, MAX_HOURS), "max_count": MAX_COUNT}
#: ``parse_policy``'s validation context: a policy arriving at an edge is refused past a
#: bound, never clamped.
_ARRIVING = {"arriving": True}


class RetentionPolicy(Frozen):
    """What GC keeps of a stream's snapshots; the defaults are the configured ones."""

    min_count: int = Field(
        default=3, strict=True, description="The newest N REGISTERED are always kept"
    )
    min_age_hours: float = Field(default=24.0, description="Younger (registry time) are kept")
    max_count: int | None = Field(
        default=None,
        strict=True,
        description="Cap: unprotected snapshots beyond the newest N kept go",
    )
    max_age_hours: float | None = Field(
        default=None, description="Cap: unprotected snapshots older than this go"
    )
    delete_changelog_below_trim: bool = Field(
        default=False, description="Also delete changelog segments wholly below the trim point"
    )
    min_generations: int = Field(
        default=1,
        strict=True,
        description="The members of the newest N completed stream snapshots are kept",
    )

    #: The notes of a stored policy clamped to the bounds as it was read (empty: none).
    _clamped: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _stored_within_bounds(
        cls, data: Any, handler: ModelWrapValidatorHandler[RetentionPolicy], info: ValidationInfo
    ) -> RetentionPolicy:
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
    def _coherent(self) -> RetentionPolicy:
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
        return self.max_count is not None or self.max_age_hours is not None


def policy_problems(policy: RetentionPolicy) -> list[str]:
    """Every reason ``policy`` is refused, each saying what to do instead."""
    problems: list[str] = []
    if policy.min_count < 1:
        problems.append(
            f"min_count must be at least 1 (got {policy.min_count}): the newest snapshot is "
            "always kept"
        )
    if not 0 <= policy.min_generations <= MAX_MIN_GENERATIONS:
        problems.append(
            f"min_generations must be 0 to {MAX_MIN_GENERATIONS} (got {policy.min_generations}):"
            " the stream's HEAD remembers that many completed generations"
        )
    if policy.min_count > MAX_MIN_COUNT:
        problems.append(
            f"min_count may be at most {MAX_MIN_COUNT} (got {policy.min_count}): keep more "
            "with max_count, a longer min_age_hours, or holds"
        )
    for name in HOUR_FIELDS:
        value = getattr(policy, name)
        if value is not None and (not math.isfinite(value) or not 0 <= value <= MAX_HOURS):
            problems.append(
                f"{name} must be a finite number of hours >= 0 and at most {MAX_HOURS:g} "
                f"(100 years; got {value:g})"
            )
    if policy.max_count is not None and policy.max_count > MAX_COUNT:
        problems.append(f"max_count may be at most {MAX_COUNT} (got {policy.max_count})")
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
