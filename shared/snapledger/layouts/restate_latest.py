"""A partition's ``latest.json``, Restate's pointer: its model, parsing, and the rewrites
snapledger makes of it, always by compare-and-swap (``latest_with`` to heal or restore from a
chosen snapshot, ``latest_without`` to drop what GC deleted). Fields snapledger does not know
are kept. Pure.
"""

import json
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.layouts.restate_documents import (
    Fingerprint,
    LogId,
    Lsn,
    Partition,
    RestateDocument,
    SnapshotId,
    Text,
    Timestamp,
    check_path,
    describe,
    load_json,
)
from snapledger.layouts.restate_keys import LATEST_NAME


class RestateRetained(RestateDocument):
    """One of latest.json's ``retained_snapshots``."""

    snapshot_id: SnapshotId
    min_applied_lsn: Lsn
    created_at: Timestamp
    path: Annotated[str, Field(max_length=1024)]

    @model_validator(mode="after")
    def _path_is_the_folder(self) -> "RestateRetained":
        check_path(self.path, self.min_applied_lsn, self.snapshot_id)
        return self


class RestateLatest(RestateDocument):
    """A partition's ``latest.json`` (Restate's ``LatestSnapshot``, "V1" or "V2"): the
    snapshot Restate restores from, and the ones it still retains, newest first."""

    version: Literal["V1", "V2"]
    partition_id: Partition
    log_id: LogId | None = None
    cluster_name: Text
    cluster_fingerprint: Fingerprint | None = None
    node_name: Text
    created_at: Timestamp
    snapshot_id: SnapshotId
    min_applied_lsn: Lsn
    path: Annotated[str, Field(max_length=1024)]
    retained_snapshots: list[RestateRetained] = Field(default_factory=list)

    @model_validator(mode="after")
    def _path_is_the_folder(self) -> "RestateLatest":
        check_path(self.path, self.min_applied_lsn, self.snapshot_id)
        return self

    def retained(self) -> tuple[RestateRetained, ...]:
        """The snapshots Restate retains, newest first: ``retained_snapshots``, or (a V1
        pointer, none listed) the one it names, as Restate reads it."""
        if self.retained_snapshots:
            return tuple(self.retained_snapshots)
        return (
            RestateRetained(
                snapshot_id=self.snapshot_id,
                min_applied_lsn=self.min_applied_lsn,
                created_at=self.created_at,
                path=self.path,
            ),
        )

    @property
    def retained_ids(self) -> frozenset[str]:
        return frozenset(entry.snapshot_id for entry in self.retained())


def parse_latest(raw: bytes, *, partition: int | None = None) -> RestateLatest:
    """Parse a partition's Restate ``latest.json``; with ``partition`` (from its key),
    check that it is that partition's. Raise ManifestRejectedError otherwise (and never
    another exception, whatever ``raw`` holds)."""
    document = load_json(raw, LATEST_NAME)
    try:
        latest = RestateLatest.model_validate(document)
    except ValidationError as exc:
        raise ManifestRejectedError(
            "latest.json is not a Restate 1.7 snapshot pointer (V1 or V2): " + describe(exc)
        ) from None
    if partition is not None and latest.partition_id != partition:
        raise ManifestRejectedError(
            f"latest.json says partition_id={latest.partition_id} but it is partition "
            f"{partition}'s pointer: Restate would refuse to restore from it; rewrite it "
            "from that partition's snapshots"
        )
    return latest


class RestatePointerError(ValueError):
    """A rewrite of latest.json that would break Restate's restore; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def replay_floor(latest: RestateLatest) -> int:
    """The oldest ``min_applied_lsn`` Restate retains: it may trim its log up to here, so
    it can restore only from a snapshot at or above it."""
    return min(entry.min_applied_lsn for entry in latest.retained())


def latest_with(latest: RestateLatest, snapshot_id: str) -> bytes:
    """``latest`` repointed at its retained snapshot ``snapshot_id`` (to heal, or to restore
    from a chosen one): the bytes to write back by compare-and-swap. Fields snapledger does
    not know are kept. Raises RestatePointerError if Restate does not retain that one."""
    target = next((e for e in latest.retained() if e.snapshot_id == snapshot_id), None)
    if target is None:
        raise RestatePointerError(
            f"Restate's latest.json for partition {latest.partition_id} does not retain "
            f"snapshot {snapshot_id!r} (it retains {', '.join(sorted(latest.retained_ids))}): "
            "Restate may have trimmed the log it would replay after it"
        )
    document = _document(latest)
    document.update(
        snapshot_id=target.snapshot_id,
        min_applied_lsn=target.min_applied_lsn,
        created_at=target.created_at,
        path=target.path,
    )
    return _render(document)


def latest_without(latest: RestateLatest, snapshot_ids: Iterable[str]) -> bytes:
    """``latest`` with ``snapshot_ids`` (deleted by GC) dropped from ``retained_snapshots``:
    the bytes to write back by compare-and-swap. Fields snapledger does not know are kept.
    Raises RestatePointerError if one of them is the snapshot latest.json names."""
    dropped = set(snapshot_ids)
    if latest.snapshot_id in dropped:
        raise RestatePointerError(
            f"snapshot {latest.snapshot_id} is the one Restate's latest.json for partition "
            f"{latest.partition_id} names: it restores from it, so it is never deleted"
        )
    document = _document(latest)
    if "retained_snapshots" in document:
        document["retained_snapshots"] = [
            entry
            for entry in document["retained_snapshots"]
            if entry.get("snapshot_id") not in dropped
        ]
    return _render(document)


def _document(latest: RestateLatest) -> dict[str, Any]:
    """``latest`` as JSON again: the fields it was given (unknown ones included), and no
    defaults it was not given."""
    return latest.model_dump(mode="json", exclude_unset=True)


def _render(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode()
