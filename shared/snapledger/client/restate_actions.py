"""The control client's Restate actions (``Snapledger`` has them): heal a Restate stream's
latests, restore a partition from a chosen snapshot (docs/console.md, "Restate streams")."""

from __future__ import annotations

import getpass
from typing import Any

from snapledger.client.payloads import Answer
from snapledger.ids import new_ulid

#: ``by`` when the system names no user.
UNKNOWN_USER = "snapledger client"


class RestateActions:
    """What ``Snapledger`` can do to a Restate stream, through its ``call``."""

    def call(self, function: str, payload: dict[str, Any]) -> Answer:
        raise NotImplementedError  # Snapledger's: send the payload, raise a refusal

    def heal(
        self,
        stream: str,
        partition: int | None = None,
        *,
        dry_run: bool = False,
        after_partition: int | None = None,
    ) -> Answer:
        """Check the snapshot each partition's Restate ``latest.json`` names (``partition``,
        or each one of ``stream`` the registry knows) and repoint a broken one to the newest
        healthy snapshot Restate retains; ``dry_run``: only say what it would do. The
        answer's ``outcomes``: one per partition (``state``, ``problems``, ``healed_to``).
        One call is bounded by the function's time: ``complete`` false and
        ``after_partition`` say where to continue (pass it back; ``heal_all`` does)."""
        payload: dict[str, Any] = {"action": "restate_heal", "stream": stream, "dry_run": dry_run}
        if partition is not None:
            payload["partition"] = partition
        if after_partition is not None:
            payload["after_partition"] = after_partition
        return self.call("gc", payload)

    def heal_all(self, stream: str, *, dry_run: bool = False) -> Answer:
        """``heal`` of every partition, following ``after_partition`` until the heal is
        complete: one answer with every call's outcomes (each call checks at least one
        partition, so it ends)."""
        answer = self.heal(stream, dry_run=dry_run)
        outcomes = list(answer.get("outcomes", []))
        while answer.get("complete") is False:
            answer = self.heal(stream, dry_run=dry_run, after_partition=answer["after_partition"])
            outcomes += answer.get("outcomes", [])
        return {**answer, "outcomes": outcomes}

    def restore_latest(
        self,
        stream: str,
        partition: int,
        snapshot_id: str,
        *,
        reason: str = "",
        by: str | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Point a Restate partition's ``latest.json`` at ``snapshot_id`` (one Restate still
        retains and that passes the check; it is held): the node restores from it when its
        partition store is next rebuilt and replays Restate's log after it, so the partition
        comes back to the same state from an older base (a recovery tool, not a rollback).
        ``by`` defaults to this machine's user name. The
        answer: ``snapshot_id``, ``lsn``, ``previous_snapshot_id``, ``hold_id``."""
        return self.call(
            "gc",
            {
                "action": "restate_restore",
                "stream": stream,
                "partition": partition,
                "snapshot_id": snapshot_id,
                "by": by or _user_name(),
                "reason": reason,
                # one id per restore, so a retried invocation applies it once
                "request_id": request_id or new_ulid(),
            },
        )


def _user_name() -> str:
    """Who runs the client, as the system names them (recorded as ``by``)."""
    try:
        return getpass.getuser()[:128] or UNKNOWN_USER
    except (OSError, KeyError):  # no login name and no password entry (e.g. a container)
        return UNKNOWN_USER
