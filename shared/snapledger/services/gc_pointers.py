"""GC and the pointer objects: what ``latest.json`` or ``generation.json`` names is never
deleted, and a lagging ``latest.json`` is repaired (DESIGN invariants 7 and 12).

A reader bootstraps from ``snapshots/{stream}/{partition}/latest.json`` (or the stream's
``generation.json``) with one GET, without asking the ledger. While registration's write
of the pointer keeps failing (retries, then the failure queue), the pointer still names
the *previous* latest, which the ledger no longer protects as its latest: deleting it
would leave the reader with ``NotFoundError`` though the ledger has a latest. So, for
each lineage with something to delete, GC:

1. **reads the pointer objects** (``LineagePointers.named``): ``latest.json``, one GET,
   and ``generation.json``, one GET per stream per run, only when a snapshot it is about
   to delete counted for a stream snapshot (only a member can be named there). A lineage
   with nothing to delete reads nothing: the pointers cost no request there;
2. **keeps what they name** as GC read them, whatever its status (the plan's keep reasons
   ``named_by_latest_json``, ``named_by_generation_json``; ``core/retention.plan``): an
   EXPIRING one stays EXPIRING, its files untouched, and goes once no pointer names it;
   a prefix the orphan sweep would take is kept (``kept``, with the pointer as its note);
3. **repairs a lagging ``latest.json``** (``LineagePointers.repair``): one that is missing,
   unreadable, another lineage's, or names anything but the ledger's latest is published
   again from a consistent read of HEAD with ``latest_pointer.publish_latest`` (the same
   conditional writes registration uses). What it named is still kept this run, for a
   reader that read it a moment ago; the next run may delete it. A repair that fails (or
   that ``publish_latest`` declines) is ``unrepaired``: the run reports itself failed
   (``GcReport.failed``) and the gc function publishes ``Gc_pointers_unrepaired``.

A GET that fails (other than "no such object") fails the lineage's pass for this run: GC
does not delete what it cannot check.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pydantic import ValidationError

from snapledger.core.retention import Named
from snapledger.errors import (
    InvalidKeyError,
    ManifestTooLargeError,
    NotFoundError,
    SnapledgerError,
)
from snapledger.layout import generation_pointer_key, latest_pointer_key, parse_snapshot_prefix
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.limits import MAX_POINTER_BYTES
from snapledger.models.ledger import Head, LineageId, snapshot_sort_key
from snapledger.models.pointer import GenerationPointer, LatestPointer
from snapledger.models.retention_reasons import KeepReason
from snapledger.ports import ObjectStore
from snapledger.services.gc_deps import GcDeps
from snapledger.services.latest_pointer import PointerOutcome, publish_latest


class PointerUnreadableError(SnapledgerError):
    """A producer's pointer object (Restate's latest.json) is not one snapledger can read:
    nothing is decided (the lineage's pass stops, and the run alarms)."""


@dataclass
class PointerCheck:
    """What GC found in a lineage's ``latest.json`` and what it did about it.

    ``state``: ``current`` (names the ledger's latest), ``lagging`` (names another of the
    lineage's snapshots), ``missing``, ``unreadable`` (not a pointer), ``foreign`` (names
    another lineage's snapshot) or ``unexpected`` (exists while the ledger has no latest).
    ``action``: ``none``, ``repaired``, ``would_repair`` (a dry run) or ``unrepaired``.
    """

    key: str
    state: str
    names: str | None = None  # the snapshot id it names in this lineage
    lagging: bool = False  # it is not exactly the ledger's latest: to repair
    action: str = "none"
    note: str = ""

    @property
    def repaired(self) -> bool:
        return self.action == "repaired"

    @property
    def unrepaired(self) -> bool:
        return self.action == "unrepaired"

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "state": self.state,
            "names": self.names,
            "lagging": self.lagging,
            "action": self.action,
            "note": self.note,
        }


class GenerationPointers:
    """Each stream's ``generation.json``, read at most once per run: partition -> the
    sort keys its newest completed stream snapshot names there."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._members: dict[str, dict[int, tuple[str, ...]]] = {}

    def named(self, stream: str, partition: int) -> tuple[str, ...]:
        with self._lock:  # lineages of one stream ask from several threads: one GET
            if stream not in self._members:
                self._members[stream] = self._read(stream)
            return self._members[stream].get(partition, ())

    def _read(self, stream: str) -> dict[int, tuple[str, ...]]:
        raw = _get(self._store, generation_pointer_key(stream))
        if raw is None:
            return {}
        try:
            pointer = GenerationPointer.model_validate_json(raw)
        except ValidationError:
            return {}  # not a pointer any reader could follow
        if pointer.stream != stream:
            return {}
        members: dict[int, tuple[str, ...]] = {}
        for member in pointer.members:
            keys = {snapshot_sort_key(member.lsn, member.snapshot_id)}
            keys |= _prefix_key(member.prefix, LineageId(stream=stream, partition=member.partition))
            members[member.partition] = tuple(sorted(keys))
        return members


@dataclass
class LineagePointers:
    """One lineage's pointer objects, each read at most once, on first need."""

    store: ObjectStore
    head: Head
    generations: GenerationPointers
    check: PointerCheck | None = None
    _latest: tuple[str, ...] = ()
    _members_read: bool = False
    _named: dict[str, tuple[KeepReason, ...]] = field(default_factory=dict)

    def named(self, *, members: bool = False) -> Named:
        """Sort key -> the pointers that name it; ``members``: a member of a stream
        snapshot is at stake, so ``generation.json`` is read too."""
        if self.check is None:
            self._latest = self._read_latest()
            for key in self._latest:
                self._add(key, KeepReason.NAMED_BY_LATEST_JSON)
        if members and not self._members_read:
            self._members_read = True
            lineage = self.head.lineage
            for key in self.generations.named(lineage.stream, lineage.partition):
                self._add(key, KeepReason.NAMED_BY_GENERATION_JSON)
        return self._named

    def named_prefix(self, prefix: str) -> str | None:
        """Which pointer names the snapshot at ``prefix`` (None: none, as read so far)."""
        reasons = self._named.get(next(iter(_prefix_key(prefix, self.head.lineage)), ""), ())
        return ", ".join(r.value for r in reasons) or None

    def repair(self, deps: GcDeps[LayoutStrategy], *, dry_run: bool) -> None:
        """Publish the ledger's latest over a lagging ``latest.json`` (not in a dry run)."""
        check = self.check
        if check is None or not check.lagging:
            return
        if dry_run:
            check.action = "would_repair"
            return
        lineage = self.head.lineage
        try:
            fresh = deps.ledger.get_head(lineage, consistent=True)
            if fresh is not None and _latest_key(fresh) in self._latest:
                check.state, check.lagging = "current", False  # the index page was stale
                return
            if fresh is None or _latest_key(fresh) is None:
                check.action = "unrepaired"
                check.note = "the ledger has no latest for this lineage to publish"
                return
            outcome = publish_latest(lineage, fresh, ledger=deps.ledger, store=deps.store)
        except Exception as exc:  # any failure: what it names stays kept, the run alarms
            check.action = "unrepaired"
            check.note = f"publishing the ledger's latest failed: {type(exc).__name__}: {exc}"
            return
        if outcome is PointerOutcome.WRITTEN:
            check.action = "repaired"
            check.note = f"now names {fresh.latest_snapshot_id} at LSN {fresh.latest_lsn}"
        else:
            check.action = "unrepaired"
            check.note = f"publish_latest answered {outcome.value} and wrote nothing"

    def _add(self, key: str, reason: KeepReason) -> None:
        if reason not in self._named.get(key, ()):
            self._named[key] = (*self._named.get(key, ()), reason)

    def _read_latest(self) -> tuple[str, ...]:
        """GET ``latest.json``; sets ``check``; the sort keys it names in this lineage."""
        lineage = self.head.lineage
        key = latest_pointer_key(lineage.stream, lineage.partition)
        latest = _latest_key(self.head)
        named: tuple[str, ...] = ()
        pointer: LatestPointer | None = None
        try:
            raw = _get(self.store, key)
        except ManifestTooLargeError as exc:
            raw, state, note = None, "unreadable", str(exc)
        else:
            state, note = "missing", ""
        if raw is not None:
            try:
                pointer = LatestPointer.model_validate_json(raw)
            except ValidationError:
                state, note = "unreadable", "not a latest.json v1 document"
        if pointer is not None:
            if (pointer.stream, pointer.partition) != (lineage.stream, lineage.partition):
                state = "foreign"
                note = f"names {pointer.stream}/{pointer.partition}'s {pointer.snapshot_id}"
            else:
                keys = {pointer.sort_key} | _prefix_key(pointer.prefix, lineage)
                named = tuple(sorted(keys))
                state = "current" if pointer.sort_key == latest else "lagging"
                if latest is None:
                    state = "unexpected"
        check = PointerCheck(key=key, state=state, note=note)
        if pointer is not None and state != "foreign":
            check.names = pointer.snapshot_id
        check.lagging = state == "unexpected" or (state != "current" and latest is not None)
        if state == "unexpected":
            check.note = "the ledger has no latest for this lineage"
        self.check = check
        return named


def _get(store: ObjectStore, key: str) -> bytes | None:
    try:
        return store.get(key, max_bytes=MAX_POINTER_BYTES)
    except NotFoundError:
        return None


def _latest_key(head: Head) -> str | None:
    if head.latest_lsn is None or head.latest_snapshot_id is None:
        return None
    return snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)


def _prefix_key(prefix: str, lineage: LineageId) -> set[str]:
    """The sort key of the snapshot at ``prefix`` if it is one of ``lineage``'s."""
    try:
        location = parse_snapshot_prefix(prefix)
    except InvalidKeyError:
        return set()
    if (location.stream, location.partition) != (lineage.stream, lineage.partition):
        return set()
    return {snapshot_sort_key(location.lsn, location.snapshot_id)}
