"""The control client's retention actions (``Snapledger`` has them): GC planned or run,
holds placed and released, a stream's retention policy read, set and reset
(docs/console.md, "The gc function")."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from snapledger.client.payloads import Answer, drop_none
from snapledger.errors import InvalidRequestError
from snapledger.ids import new_ulid
from snapledger.limits import MAX_HOLD_HOURS
from snapledger.models.policy import POLICY_FIELDS

#: ``set_policy``'s keywords: the retention policy's fields, as models/policy.py declares them.
POLICY_FIELD_NAMES = tuple(f.name for f in POLICY_FIELDS)


def _with_policy_keywords(method: Callable[..., Any]) -> inspect.Signature:
    """``method``'s signature with its ``**fields`` spelled out as the policy's fields."""
    signature = inspect.signature(method)
    named = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    fields = [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=f.kind | None
        )
        for f in POLICY_FIELDS
    ]
    return signature.replace(parameters=[*named, *fields])


class RetentionActions:
    """What ``Snapledger`` can do to what GC keeps, through its ``call``."""

    def call(self, function: str, payload: dict[str, Any]) -> Answer:
        raise NotImplementedError  # Snapledger's: send the payload, raise a refusal

    def gc_plan(self, stream: str | None = None) -> Answer:
        """What GC would delete and keep, and why (a dry run: nothing is deleted)."""
        return self.call("gc", drop_none({"dry_run": True, "stream": stream}))

    def gc(self, stream: str | None = None) -> Answer:
        """Run garbage collection now (of ``stream``, or of every stream)."""
        return self.call("gc", drop_none({"dry_run": False, "stream": stream}))

    def hold(
        self,
        stream: str,
        partition: int,
        snapshot_id: str,
        *,
        expires_in: timedelta | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> Answer:
        """Keep a snapshot from GC until released (or until ``expires_in`` has passed, at
        most ``limits.MAX_HOLD_HOURS``)."""
        if expires_in is not None and not (
            timedelta(0) < expires_in <= timedelta(hours=MAX_HOLD_HOURS)
        ):
            raise InvalidRequestError(
                f"expires_in must be more than 0 and at most {MAX_HOLD_HOURS:,.0f} hours "
                f"(100 years), got {expires_in}: omit it for a hold until released"
            )
        expires = None if expires_in is None else (datetime.now(UTC) + expires_in).isoformat()
        return self.call(
            "gc",
            drop_none(
                {
                    "action": "hold",
                    "stream": stream,
                    "partition": partition,
                    "snapshot_id": snapshot_id,
                    "expires_at": expires,
                    "reason": reason,
                    "by": by,
                }
            ),
        )

    def release(
        self, stream: str, partition: int, snapshot_id: str, *, hold_id: str | None = None
    ) -> Answer:
        """Release an operator's hold on a snapshot."""
        return self.call(
            "gc",
            drop_none(
                {
                    "action": "release",
                    "stream": stream,
                    "partition": partition,
                    "snapshot_id": snapshot_id,
                    "hold_id": hold_id,
                }
            ),
        )

    def policy(self, stream: str) -> Answer:
        """The stream's retention policy in force (``policy``, ``version``)."""
        return self.call("gc", {"action": "policy_get", "stream": stream})

    def set_policy(
        self,
        stream: str,
        *,
        by: str | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
        **fields: Any,
    ) -> Answer:
        """Change the given fields of the stream's own policy (others keep their value): one
        keyword per policy field as ``models/policy.py`` declares it (``help()`` lists them),
        e.g. ``min_count=5``, ``delete_changelog_below_trim=True``; ``None`` leaves one as it
        is. An unknown keyword is a ``TypeError``, as for any function."""
        unknown = sorted(set(fields) - set(POLICY_FIELD_NAMES))
        if unknown:
            raise TypeError(
                f"set_policy() got unknown policy fields {unknown}: use {list(POLICY_FIELD_NAMES)}"
            )
        return self.call(
            "gc",
            drop_none(
                {
                    "action": "policy_set",
                    **self._change(stream, by, expected_version, request_id),
                    **fields,
                }
            ),
        )

    def reset_policy(
        self,
        stream: str,
        *,
        by: str | None = None,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Remove the stream's own policy: the deployment's default applies."""
        return self.call(
            "gc",
            drop_none(
                {"action": "policy_reset", **self._change(stream, by, expected_version, request_id)}
            ),
        )

    # help() and editors list the policy's fields as set_policy's keywords.
    set_policy.__signature__ = _with_policy_keywords(set_policy)  # type: ignore[attr-defined]

    @staticmethod
    def _change(
        stream: str, by: str | None, expected_version: int | None, request_id: str | None
    ) -> dict[str, Any]:
        # One id per change, so a retried invocation (a lost answer) applies it once.
        return {
            "stream": stream,
            "by": by,
            "expected_version": expected_version,
            "request_id": request_id or new_ulid(),
        }
