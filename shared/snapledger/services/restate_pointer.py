"""Restate's ``latest.json``: read, and rewritten only by compare-and-swap.

Restate owns the object and rewrites it (If-Match on its ETag) after each snapshot, so
every write here is conditional on the version read, and a lost race reads again and
decides again from what Restate wrote (``rewrite``). snapledger writes it for three
reasons only: to drop the snapshots GC deleted from ``retained_snapshots`` (``prune``), to
heal a broken latest, and on an operator's restore-from-chosen (``services/restate_heal.py``).

``RestatePointers`` is GC's view of it for a Restate lineage, with the interface of
``gc_pointers.LineagePointers``: what latest.json names is kept whatever its status, and
there is nothing to repair (Restate publishes it; a broken latest is healed, not repaired).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.core.retention import Named
from snapledger.errors import ManifestTooLargeError, StaleVersionError
from snapledger.layouts import restate
from snapledger.layouts.restate_prefix import RestatePrefix
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.limits import MAX_POINTER_BYTES
from snapledger.models.ledger import snapshot_sort_key
from snapledger.models.retention_reasons import KeepReason
from snapledger.ports import ObjectStore
from snapledger.services.gc_deps import GcDeps
from snapledger.services.gc_pointers import PointerCheck, PointerUnreadableError

#: Compare-and-swap attempts before giving up (each lost one means Restate wrote between
#: our read and our write: rare, as Restate writes once per snapshot).
MAX_REWRITES = 5


class Rewrite(StrEnum):
    WRITTEN = "written"
    UNCHANGED = "unchanged"  # nothing to change in what was read
    MISSING = "missing"  # no latest.json


@dataclass(frozen=True)
class ReadLatest:
    latest: restate.RestateLatest
    etag: str


def read_latest(store: ObjectStore, layout: RestatePrefix, partition: int) -> ReadLatest | None:
    """The partition's latest.json and its ETag; None if there is none. Raises
    PointerUnreadableError (with the reason) for anything that is not one."""
    key = layout.latest_key(partition)
    try:
        found = store.get_versioned(key, max_bytes=MAX_POINTER_BYTES)
    except ManifestTooLargeError as exc:
        raise PointerUnreadableError(f"{key}: {exc}") from exc
    if found is None:
        return None
    raw, etag = found
    if len(raw) > MAX_POINTER_BYTES:
        raise PointerUnreadableError(f"{key} is over {MAX_POINTER_BYTES:,} bytes")
    try:
        latest = restate.parse_latest(raw, partition=partition)
    except ManifestRejectedError as exc:
        raise PointerUnreadableError(f"{key}: {exc.reason}") from exc
    return ReadLatest(latest, etag)


def rewrite(
    store: ObjectStore,
    layout: RestatePrefix,
    partition: int,
    change: Callable[[restate.RestateLatest], bytes | None],
    *,
    first: ReadLatest | None = None,
) -> tuple[Rewrite, restate.RestateLatest | None]:
    """Apply ``change`` (the new bytes, or None: nothing to do) to latest.json by
    compare-and-swap, reading again after each lost race; the outcome and the pointer it
    was decided on. ``first``: a read just made, tried first (its ETag conditions the
    write, so a stale one only costs the lost race). ``change`` may raise (e.g.
    RestatePointerError): nothing is written."""
    key = layout.latest_key(partition)
    for attempt in range(MAX_REWRITES):
        read = (
            first if attempt == 0 and first is not None else read_latest(store, layout, partition)
        )
        if read is None:
            return Rewrite.MISSING, None
        body = change(read.latest)
        if body is None:
            return Rewrite.UNCHANGED, read.latest
        try:
            store.replace(key, body, if_match=read.etag)
        except StaleVersionError:
            continue  # Restate (or another run) wrote meanwhile: decide again on its version
        return Rewrite.WRITTEN, read.latest
    raise StaleVersionError(
        f"{key} changed under each of {MAX_REWRITES} compare-and-swap attempts; the next run "
        "tries again"
    )


def prune(
    store: ObjectStore,
    layout: RestatePrefix,
    partition: int,
    deleted: Iterable[str],
    *,
    first: ReadLatest | None = None,
) -> Rewrite:
    """Drop the snapshots GC deleted from ``retained_snapshots`` (none listed: nothing
    written). Never drops the one latest.json names (``latest_without`` refuses)."""
    gone = frozenset(deleted)

    def without(latest: restate.RestateLatest) -> bytes | None:
        if not gone & {entry.snapshot_id for entry in latest.retained_snapshots}:
            return None
        return restate.latest_without(latest, gone)

    outcome, _ = rewrite(store, layout, partition, without, first=first)
    return outcome


@dataclass
class RestatePointers:
    """GC's view of a Restate lineage's latest.json (see the module docstring)."""

    store: ObjectStore
    layout: RestatePrefix
    partition: int
    #: latest.json as this run already read it (heal's read), if it still stands.
    known: ReadLatest | None = None
    check: PointerCheck | None = None
    _named: dict[str, tuple[KeepReason, ...]] = field(default_factory=dict)
    _prefix: str | None = None

    def named(self, *, members: bool = False) -> Named:
        """Sort key -> NAMED_BY_LATEST_JSON for the snapshot Restate restores from. An
        unreadable latest.json stops the lineage's pass (PointerUnreadableError): GC does
        not delete what it cannot check."""
        if self.check is None:
            key = self.layout.latest_key(self.partition)
            try:
                read = self.known or read_latest(self.store, self.layout, self.partition)
            except PointerUnreadableError as exc:
                self.check = PointerCheck(key=key, state="unreadable", note=str(exc))
                raise
            if read is None:
                self.check = PointerCheck(key=key, state="missing", note="Restate wrote none yet")
            else:
                self.known = read
                latest = read.latest
                self.check = PointerCheck(key=key, state="current", names=latest.snapshot_id)
                sort_key = snapshot_sort_key(latest.min_applied_lsn, latest.snapshot_id)
                self._named[sort_key] = (KeepReason.NAMED_BY_LATEST_JSON,)
                self._prefix = self.layout.root(self.partition) + latest.path + "/"
        return self._named

    def named_prefix(self, prefix: str) -> str | None:
        if prefix == self._prefix:
            return KeepReason.NAMED_BY_LATEST_JSON.value
        return None

    def repair(self, deps: GcDeps[LayoutStrategy], *, dry_run: bool) -> None:
        """Nothing: Restate publishes its latest.json (a broken latest is healed)."""
