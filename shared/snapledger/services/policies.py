"""Get and set a stream's retention policy (the console and the CLI call these).

A stream without a stored policy uses the configured default. ``set_policy`` changes only
the fields given (``None`` clears a cap), validates the whole result, and writes it on the
version read, so a concurrent edit is never overwritten unseen: pass ``expected_version``
(from ``get_policy``) to refuse if anyone changed it since.

A new policy applies to every lineage GC plans after it is stored; a run already planning
a lineage finishes that lineage with the policy it read. Use a hold to protect a
snapshot at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from snapledger.clock import Clock
from snapledger.errors import ConcurrencyError, InvalidRequestError
from snapledger.layout import check_stream_name
from snapledger.models.policy import RetentionPolicy, StoredPolicy, parse_policy
from snapledger.services.gc_deps import PolicyStore

MAX_WRITE_ATTEMPTS = 5
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
        return {
            "stream": self.stream,
            "policy": self.policy.model_dump(mode="json"),
            "source": self.source,
            "version": self.version,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
            "updated_by": self.updated_by,
        }


def get_policy(store: PolicyStore, stream: str, default: RetentionPolicy) -> EffectivePolicy:
    """The stream's policy: its own if stored, else the configured default."""
    check_stream_name(stream)
    stored = store.get(stream)
    if stored is None:
        return EffectivePolicy(stream=stream, policy=default, source="default")
    return _effective(stored)


def set_policy(
    store: PolicyStore,
    stream: str,
    changes: Mapping[str, object],
    *,
    default: RetentionPolicy,
    clock: Clock,
    by: str = "",
    expected_version: int | None = None,
) -> EffectivePolicy:
    """Change the fields in ``changes`` of the stream's policy; refused with reasons if invalid."""
    check_stream_name(stream)
    unknown = sorted(set(changes) - POLICY_FIELDS)
    if unknown:
        raise InvalidRequestError(f"unknown policy fields {unknown}: use {sorted(POLICY_FIELDS)}")
    for _ in range(MAX_WRITE_ATTEMPTS):
        current = store.get(stream)
        version = 0 if current is None else current.version
        if expected_version is not None and expected_version != version:
            raise ConcurrencyError(
                f"the policy of {stream} is at version {version}, not {expected_version}: "
                "someone changed it since you read it; read it again and re-apply your change"
            )
        base = default if current is None else current.policy
        policy = parse_policy({**base.model_dump(), **changes})
        stored = StoredPolicy(
            stream=stream,
            policy=policy,
            version=version + 1,
            updated_at=clock.now(),
            updated_by=by,
        )
        if store.put(stored):
            return _effective(stored)
    raise ConcurrencyError(
        f"the policy of {stream} kept changing while it was being set: retry later"
    )


class PolicyCache:
    """Each stream's policy read once per GC run."""

    def __init__(self, store: PolicyStore, default: RetentionPolicy) -> None:
        self._store = store
        self._default = default
        self._cache: dict[str, RetentionPolicy] = {}

    def __call__(self, stream: str) -> RetentionPolicy:
        if stream not in self._cache:
            stored = self._store.get(stream)
            self._cache[stream] = self._default if stored is None else stored.policy
        return self._cache[stream]


def _effective(stored: StoredPolicy) -> EffectivePolicy:
    return EffectivePolicy(
        stream=stored.stream,
        policy=stored.policy,
        source="stream",
        version=stored.version,
        updated_at=stored.updated_at,
        updated_by=stored.updated_by,
    )
