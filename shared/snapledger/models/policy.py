"""A stream's retention policy, as stored in the ledger and set from the console or CLI.

The rule (docs/retention.md): a REGISTERED snapshot may be deleted only if it is not the
latest, not among the newest ``min_count``, older than ``min_age`` (registry time), has
no pin and no live hold, and is not a member of one of the newest ``min_generations``
completed stream snapshots (nor of an open one). The optional caps ``max_count`` and
``max_age`` only ever choose among the snapshots those protections leave; with no cap
configured every unprotected snapshot is deleted.

Durations are hours (floats) on the wire, the unit the CLI and the console use.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from pydantic import Field, ValidationError, model_validator

from snapledger.errors import InvalidRequestError
from snapledger.models.base import Frozen
from snapledger.models.generations import COMPLETED_GENERATIONS_KEPT

#: The apply step re-reads the newest ``min_count`` snapshots in the same consistent read
#: as the ones it expires (one BatchGetItem: at most 100 items), hence the ceiling.
MAX_MIN_COUNT = 50
#: How many completed stream snapshots GC can protect (what the stream's HEAD remembers).
MAX_MIN_GENERATIONS = COMPLETED_GENERATIONS_KEPT


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
    for name in ("min_age_hours", "max_age_hours"):
        value = getattr(policy, name)
        if value is not None and (not math.isfinite(value) or value < 0):
            problems.append(f"{name} must be a finite number of hours >= 0 (got {value})")
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
        return RetentionPolicy.model_validate(values)
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
