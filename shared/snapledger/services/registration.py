"""Register a snapshot whose manifest arrived: validate, then ``RegisterSnapshot``.

Expected outcomes (rejected, fenced, conflict, duplicate) are answers, recorded in the
ledger with their reasons; only unexpected failures (the store or table unreachable)
raise, so the asynchronous invoke is retried.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum

from snapledger.clock import Clock
from snapledger.core.manifest_rules import (
    ManifestRejectedError,
    check_files_present,
    manifest_digest,
    oversize_reason,
    parse_manifest,
)
from snapledger.errors import InvalidKeyError, ManifestTooLargeError, NotFoundError
from snapledger.layout import SnapshotLocation, parse_manifest_key
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.events import LatestAdvanced, SnapshotRegistered, SnapshotRejected
from snapledger.models.ledger import SnapshotStatus, snapshot_sort_key
from snapledger.models.manifest import MAX_MANIFEST_BYTES
from snapledger.ports import LedgerStore, ObjectStore
from snapledger.services.commands import CommandResult, RetryPolicy, execute


class Outcome(StrEnum):
    """What registration answered."""

    BECAME_LATEST = "became_latest"
    RECORDED = "recorded"  # registered, but not newer than the latest
    DUPLICATE = "duplicate"  # already recorded: nothing written
    FENCED = "fenced"
    REJECTED = "rejected"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class RegistrationResult:
    outcome: Outcome
    manifest_key: str
    stream: str | None = None
    partition: int | None = None
    lsn: int | None = None
    snapshot_id: str | None = None
    reason: str | None = None
    latest_lsn: int | None = None
    latest_snapshot_id: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def register_manifest(
    key: str,
    *,
    ledger: LedgerStore,
    store: ObjectStore,
    clock: Clock,
    retry: RetryPolicy | None = None,
) -> RegistrationResult:
    """Record the snapshot whose ``_manifest.json`` is at ``key`` (relative to the root)."""
    try:
        location = parse_manifest_key(key)
    except InvalidKeyError as exc:
        ledger.record_unplaceable_manifest(key, str(exc), clock.now())
        return RegistrationResult(Outcome.REJECTED, key, reason=str(exc))
    command = _command_for(location, key, store)
    result = execute(
        ledger,
        command,
        clock.now(),
        snapshot_keys=(snapshot_sort_key(location.lsn, location.snapshot_id),),
        retry=retry,
    )
    return _result(location, key, result)


def _command_for(location: SnapshotLocation, key: str, store: ObjectStore) -> RegisterSnapshot:
    common = {
        "stream": location.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
        "manifest_key": key,
    }
    try:
        raw = store.get(key, max_bytes=MAX_MANIFEST_BYTES)
    except NotFoundError:
        return RegisterSnapshot(**common, manifest_digest="missing", manifest_missing=True)
    except ManifestTooLargeError:
        info = store.head(key)  # only on this rare path: the size, for the message
        size = info.size if info else MAX_MANIFEST_BYTES + 1
        return RegisterSnapshot(
            **common, manifest_digest=f"oversize:{size}", rejection=oversize_reason(size)
        )
    digest = manifest_digest(raw)
    try:
        parsed = parse_manifest(location, raw)
        # One listing of the prefix (1,000 keys a request), not one request per file.
        check_files_present(location, parsed.manifest, store.list(location.prefix))
    except ManifestRejectedError as rejected:
        return RegisterSnapshot(
            **common, manifest_digest=digest, rejection=rejected.reason, epoch_hint=rejected.epoch
        )
    return RegisterSnapshot(**common, manifest_digest=digest, summary=parsed.summary)


def _result(location: SnapshotLocation, key: str, result: CommandResult) -> RegistrationResult:
    head = result.state.head
    base = {
        "manifest_key": key,
        "stream": location.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
        "latest_lsn": head.latest_lsn,
        "latest_snapshot_id": head.latest_snapshot_id,
    }
    events = result.events
    if not events:
        record = result.state.snapshots.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        reason = (
            record.rejection_reason if record and record.status is SnapshotStatus.REJECTED else None
        )
        return RegistrationResult(Outcome.DUPLICATE, reason=reason, **base)  # type: ignore[arg-type]
    first = events[0]
    if isinstance(first, SnapshotRejected):
        outcome = {
            "fenced": Outcome.FENCED,
            "conflict": Outcome.CONFLICT,
            "invalid": Outcome.REJECTED,
        }[first.code]
        return RegistrationResult(outcome, reason=first.reason, **base)  # type: ignore[arg-type]
    assert isinstance(first, SnapshotRegistered)
    became_latest = any(isinstance(e, LatestAdvanced) for e in events)
    outcome = Outcome.BECAME_LATEST if became_latest else Outcome.RECORDED
    return RegistrationResult(outcome, **base)  # type: ignore[arg-type]
