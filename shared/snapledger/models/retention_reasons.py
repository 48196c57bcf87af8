"""GC's two vocabularies, each declared once: why a snapshot is kept (``KeepReason``) and
which rule deletes it (``DeleteCause``).

Each member carries everything said about it: its value (the word in a plan, a command, an
event and a ledger record, unchanged on the wire), its text (what it means, in a plan's
picture), and its marker (the plotting marker a plan's picture draws a snapshot with when
it is the first reason). A ``DeleteCause`` also carries the reason template written into the
``SnapshotExpiring`` event it causes. A member cannot be declared without them; the markers of
both vocabularies are distinct (a plan's picture draws them side by side), checked when this
module is imported.

The core's retention rules (``core/retention.py``) decide which apply; the commands, the
events, the CLI and its pictures read them from here. This module sits with the models, below
the core, because the commands and events that carry a cause are models.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from snapledger.models.policy import RetentionPolicy

E = TypeVar("E", bound=StrEnum)


def _member(cls: type[E], value: str, **said: str) -> E:
    """A member of ``cls`` whose value is ``value``, carrying ``said`` as attributes; refused
    when any of them is blank."""
    missing = [name for name, text in said.items() if not text.strip()]
    if missing:
        raise TypeError(f"{cls.__name__} {value!r} is declared without its {', '.join(missing)}")
    member = str.__new__(cls, value)
    member._value_ = value
    for name, text in said.items():
        setattr(member, name, text)
    return member


class KeepReason(StrEnum):
    # No docstring: a schema naming a reason would carry it as its description.
    text: str
    marker: str

    def __new__(cls, value: str, text: str, marker: str) -> KeepReason:
        return _member(cls, value, text=text, marker=marker)

    LATEST = "latest", "the lineage's latest", "*"
    NEWEST = "newest", "among the newest min_count", "o"
    TOO_YOUNG = "too_young", "registered min_age or less ago", "^"
    PINNED = "pinned", "a job reads it", "D"
    HELD = "held", "an operator's hold is live", "s"
    GENERATION = "generation", "a member of a stream snapshot GC keeps", "p"
    WITHIN_CAPS = "within_caps", "unprotected, but no cap selects it", "h"
    IN_GRACE = "in_grace", "REJECTED, within the grace window", "8"
    NAMED_BY_LATEST_JSON = "named_by_latest_json", "latest.json names it", "P"
    NAMED_BY_GENERATION_JSON = "named_by_generation_json", "generation.json names it", "H"
    #: Not a protection: listed after the reasons that keep a snapshot found broken, which
    #: fills no newest slot and is not counted by max_count.
    BROKEN_NOT_COUNTED = "broken_not_counted", "found broken: not counted", "x"
    #: Not a protection either: a snapshot its layout says cannot be restored from (the
    #: changelog can no longer continue it), kept for its own reasons and not counted.
    UNRESTORABLE_NOT_COUNTED = "unrestorable_not_counted", "unrestorable: not counted", "+"


class DeleteCause(StrEnum):
    #: Reads after "it is": a commit that no longer finds a cap's rule true says "it is not
    #: {text}" (``core/gc_rules.expiry_refusal``).
    text: str
    marker: str
    #: The ``SnapshotExpiring`` reason, formatted with ``policy`` and ``grace_hours``.
    reason_template: str

    def __new__(cls, value: str, text: str, marker: str, reason_template: str) -> DeleteCause:
        return _member(cls, value, text=text, marker=marker, reason_template=reason_template)

    UNPROTECTED = (
        "unprotected",
        "unprotected, and no cap is configured",
        "X",
        "not the latest, not among the newest {policy.min_count}, older than "
        "{policy.min_age_hours:g}h, no pin and no live hold",
    )
    BEYOND_MAX_COUNT = (
        "beyond_max_count",
        "beyond max_count: that many retained snapshots are newer",
        "<",
        "unprotected, and max_count {policy.max_count} newer snapshots are kept",
    )
    OLDER_THAN_MAX_AGE = (
        "older_than_max_age",
        "older than max_age",
        ">",
        "unprotected, and older than max_age {policy.max_age_hours:g}h",
    )
    REJECTED = (
        "rejected",
        "REJECTED, past the grace window",
        "v",
        "REJECTED and registered more than {grace_hours:g}h ago",
    )
    #: Already EXPIRING: the plan finishes what an earlier run started (never a target).
    EXPIRING = (
        "expiring",
        "already EXPIRING: an earlier run chose it",
        "d",
        "already EXPIRING: an earlier run committed to deleting it",
    )

    def reason(self, policy: RetentionPolicy, grace_hours: float) -> str:
        """The reason a ``SnapshotExpiring`` of this cause gives, under ``policy``."""
        return self.reason_template.format(policy=policy, grace_hours=grace_hours)


#: What a plan's decision gives first, either vocabulary.
Decision = KeepReason | DeleteCause


def _distinct_markers() -> None:
    seen: dict[str, Decision] = {}
    for member in (*KeepReason, *DeleteCause):
        if member.marker in seen:
            raise TypeError(
                f"{member!r} and {seen[member.marker]!r} share the marker {member.marker!r}: "
                "a plan's picture could not tell them apart; give each its own"
            )
        seen[member.marker] = member


_distinct_markers()
