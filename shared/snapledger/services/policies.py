"""Get, set and reset a stream's retention policy (the console and the CLI call these).

A stream without a stored policy uses the configured default. Every change is an event
of the stream's own log (``PolicySet``, ``PolicyReset``), written in the same transaction
as the policy (docs/retention.md, *Policies*):

- ``set_policy`` changes only the fields given (``None`` clears a cap) and validates the
  whole result; ``reset_policy`` removes the stream's own policy, so the default applies;
- pass ``expected_version`` (from ``get_policy``; 0 for a stream on the default) to refuse
  the change if anyone changed the policy since;
- ``request_id`` makes a command idempotent: the same request delivered again (a retry,
  a redelivery) appends no second event and answers ``duplicate``.

A new policy applies to every lineage GC plans after it is stored; a run already planning
a lineage finishes that lineage with the policy it read. Use a hold to protect a
snapshot at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from snapledger.clock import Clock
from snapledger.errors import InvalidRequestError, SnapledgerError
from snapledger.ids import new_ulid
from snapledger.layout import check_stream_name
from snapledger.models.commands import ResetPolicy, SetPolicy
from snapledger.models.events import StreamEvent
from snapledger.models.policy import MAX_MIN_GENERATIONS, RetentionPolicy, StoredPolicy
from snapledger.ports import PolicyStore, StreamLogStore
from snapledger.services.commands import execute_on_stream

POLICY_FIELDS = frozenset(RetentionPolicy.model_fields)


@dataclass(frozen=True)
class EffectivePolicy:
    """The policy GC applies to a stream, and where it comes from."""

    stream: str
    policy: RetentionPolicy
    source: str  # "stream" (stored) or "default" (configuration)
    version: int | None = None
    updated_at: datetime | None = None
    updated_by: str = ""

    def to_dict(self) -> dict[str, object]:
        answer: dict[str, object] = {
            "stream": self.stream,
            "policy": self.policy.model_dump(mode="json"),
            "source": self.source,
            "version": self.version,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
            "updated_by": self.updated_by,
        }
        if self.policy.clamped:  # stored before its bounds: what applies, and why
            answer["clamped"] = list(self.policy.clamped)
        return answer


@dataclass(frozen=True)
class PolicyChange:
    """What a set or reset did: ``outcome`` and the event, and the policy now in force.

    ``outcome``: ``set`` / ``reset`` (an event was appended), ``unchanged`` (nothing to
    change: the same values, or a reset of a stream on the default) or ``duplicate`` (this
    request was already applied).
    """

    outcome: str
    effective: EffectivePolicy
    event: StreamEvent | None = None

    def to_dict(self) -> dict[str, object]:
        event = None if self.event is None else self.event.model_dump(mode="json")
        return {"outcome": self.outcome, **self.effective.to_dict(), "event": event}


def get_policy(store: PolicyStore, stream: str, default: RetentionPolicy) -> EffectivePolicy:
    """The stream's policy: its own if stored, else the configured default."""
    check_stream_name(stream)
    return _effective(stream, store.get(stream), default)


def set_policy(
    streams: StreamLogStore,
    stream: str,
    changes: Mapping[str, object],
    *,
    default: RetentionPolicy,
    clock: Clock,
    by: str = "",
    expected_version: int | None = None,
    request_id: str | None = None,
) -> PolicyChange:
    """Change the fields in ``changes`` of the stream's policy; refused with reasons if invalid."""
    check_stream_name(stream)
    unknown = sorted(set(changes) - POLICY_FIELDS)
    if unknown:
        raise InvalidRequestError(f"unknown policy fields {unknown}: use {sorted(POLICY_FIELDS)}")
    command = SetPolicy(
        stream=stream,
        changes=dict(changes),
        default=default,
        expected_version=expected_version,
        by=by,
        request_id=request_id or new_ulid(),
    )
    return _apply(streams, command, clock)


def reset_policy(
    streams: StreamLogStore,
    stream: str,
    *,
    default: RetentionPolicy,
    clock: Clock,
    by: str = "",
    expected_version: int | None = None,
    request_id: str | None = None,
) -> PolicyChange:
    """Remove the stream's own policy: the configured default applies again."""
    check_stream_name(stream)
    command = ResetPolicy(
        stream=stream,
        default=default,
        expected_version=expected_version,
        by=by,
        request_id=request_id or new_ulid(),
    )
    return _apply(streams, command, clock)


def _apply(streams: StreamLogStore, command: SetPolicy | ResetPolicy, clock: Clock) -> PolicyChange:
    result = execute_on_stream(streams, command, clock.now())
    state = result.state
    effective = _effective(command.stream, state.policy, command.default)
    if result.events:
        done = "set" if isinstance(command, SetPolicy) else "reset"
        return PolicyChange(outcome=done, effective=effective, event=result.events[-1])
    outcome = "duplicate" if state.is_duplicate(command.command_id) else "unchanged"
    return PolicyChange(outcome=outcome, effective=effective)


class StoredPolicyError(SnapledgerError):
    """A stream's stored policy cannot be read as a policy (GC refuses that stream)."""


class PolicyCache:
    """Each stream's policy read once per GC run.

    A stored policy with a duration past its bound (stored before the bound existed) is
    read clamped to it, and ``notes`` says so. One that cannot be read at all is refused
    for that stream alone (``StoredPolicyError``, every time it is asked, without reading
    it again); the other streams are collected."""

    def __init__(self, store: PolicyStore, default: RetentionPolicy) -> None:
        self._store = store
        self._default = default
        self._cache: dict[str, RetentionPolicy | StoredPolicyError] = {}
        self.notes: dict[str, tuple[str, ...]] = {}  # stream -> why its policy was clamped

    def __call__(self, stream: str) -> RetentionPolicy:
        if stream not in self._cache:
            self._cache[stream] = self._read(stream)
        found = self._cache[stream]
        if isinstance(found, StoredPolicyError):
            raise found
        return found

    def min_generations(self, stream: str) -> int:
        """The stream's ``min_generations``; for a policy GC cannot read, the most it can
        protect (its overdue stream snapshots are still failed, and nothing is unkept)."""
        try:
            return self(stream).min_generations
        except StoredPolicyError:
            return MAX_MIN_GENERATIONS

    def _read(self, stream: str) -> RetentionPolicy | StoredPolicyError:
        try:
            stored = self._store.get(stream)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            return StoredPolicyError(
                f"{stream}'s stored retention policy cannot be read ({problems}): GC skips "
                "the stream until it is replaced; the other streams are collected"
            )
        if stored is None:
            return self._default
        if stored.policy.clamped:
            self.notes[stream] = stored.policy.clamped
        return stored.policy


def _effective(
    stream: str, stored: StoredPolicy | None, default: RetentionPolicy
) -> EffectivePolicy:
    if stored is None:
        return EffectivePolicy(stream=stream, policy=default, source="default")
    return EffectivePolicy(
        stream=stored.stream,
        policy=stored.policy,
        source="stream",
        version=stored.version,
        updated_at=stored.updated_at,
        updated_by=stored.updated_by,
    )
