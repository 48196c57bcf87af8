"""Publish a lineage's latest snapshot as ``snapshots/{stream}/{partition}/latest.json``,
and a stream's newest completed stream snapshot as ``snapshots/{stream}/generation.json``.

Registration calls ``publish_latest`` after every commit that made a snapshot latest and
for every redelivered manifest (a duplicate), with the lineage's HEAD as it committed or
loaded it. It always publishes the ledger's latest, never the one an event named, so the
order deliveries arrive in does not matter:

- **exactly what the ledger says**: the stored pointer is read first (one GET, with its
  ETag, at most ``MAX_POINTER_BYTES``) and kept only when it is exactly the pointer of the
  ledger's latest (the same snapshot, files, offsets, times: compared with the ledger's
  record and manifest, never with itself). Anything else is replaced, always with S3
  conditional writes, ``If-None-Match: *`` to create and ``If-Match: <ETag>`` to replace,
  so of two writers racing, the one that read an older version loses and reads again.
  Replaced too: an object that is not a pointer (not JSON, too large, nested too deep),
  another lineage's pointer copied here, and one naming a "newer" snapshot than the
  ledger's latest (a huge LSN, a made-up id): what a pointer says of itself is not trusted;
- **never backwards**, against the ledger: the pointer published is always the ledger's
  latest, which never moves backwards. A stored pointer that names a newer snapshot than
  the HEAD the caller holds makes the publisher read HEAD again (consistently): if the
  ledger has moved past the caller's HEAD, that newer latest is what is published (or
  kept); if not, the stored pointer named nothing the ledger has as latest and is replaced;
- **converges after a crash between the commit and the write**: the manifest's message
  is then not deleted from the registration queue, so SQS delivers it again; its
  registration is a duplicate, which publishes the pointer again. A failed write fails
  the message the same way. After the queue's last attempt the message goes to its
  dead-letter queue (alarmed); any later snapshot of the lineage also repairs it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from snapledger.core.stream import StreamState
from snapledger.errors import LostRaceError, ObjectExistsError, StaleVersionError
from snapledger.layout import generation_pointer_key, latest_pointer_key
from snapledger.limits import MAX_POINTER_BYTES
from snapledger.models.ledger import Head, LineageId, snapshot_sort_key
from snapledger.models.manifest import MAX_MANIFEST_BYTES, ManifestV1
from snapledger.models.pointer import (
    GenerationPointer,
    LatestPointer,
    PointerT,
    PointerUnreadableError,
    parse_pointer,
)
from snapledger.ports import LedgerStore, ObjectStore, StreamLogStore

#: Conditional writes lost to other writers before giving up (each loser reads again).
MAX_ATTEMPTS = 10


class PointerOutcome(StrEnum):
    WRITTEN = "written"  # latest.json now names the ledger's latest
    CURRENT = "current"  # it already was exactly the ledger's latest: nothing written
    NO_LATEST = "no_latest"  # the lineage has no latest snapshot (the stream no generation)


def publish_latest(
    lineage: LineageId,
    head: Head,
    *,
    ledger: LedgerStore,
    store: ObjectStore,
    known: LatestPointer | None = None,
) -> PointerOutcome:
    """Make ``latest.json`` exactly the pointer of the ledger's latest snapshot: ``head``'s,
    or a newer one the ledger has when the stored pointer names one past ``head``'s.

    ``known``: the pointer, when the caller already has its record and manifest (the
    registration that made it latest); otherwise they are read (one BatchGetItem, one
    GET of the manifest) when the stored pointer names the latest (to compare it) or is
    to be replaced. A stored pointer past ``head``'s latest costs one consistent read of
    HEAD more.
    """
    target = _latest_sort_key(head)
    if target is None:
        return PointerOutcome.NO_LATEST
    key = latest_pointer_key(lineage.stream, lineage.partition)
    pointer = known if known is not None and known.sort_key == target else None

    def expected() -> LatestPointer:
        nonlocal pointer
        if pointer is None:
            assert target is not None
            pointer = read_pointer(lineage, target, ledger=ledger, store=store)
        return pointer

    def current(raw: bytes) -> bool:
        nonlocal target, pointer
        stored = _readable(LatestPointer, raw)
        if stored is None or stored.lineage_problem(lineage.stream, lineage.partition):
            return False  # not a pointer, or not this lineage's: replaced
        assert target is not None
        if stored.sort_key > target:
            # It claims a newer latest than the HEAD held: only the ledger can say so.
            fresh = _latest_sort_key(ledger.load(lineage).head)
            if fresh is not None and fresh > target:
                target, pointer = fresh, None  # the ledger moved on: publish its latest
        return stored.sort_key == target and stored == expected()

    def render() -> bytes:
        return expected().model_dump_json(exclude_none=False).encode()

    return publish_unless_current(store, key, current=current, render=render)


def _latest_sort_key(head: Head | None) -> str | None:
    if head is None or head.latest_lsn is None or head.latest_snapshot_id is None:
        return None
    return snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)


def publish_unless_current(
    store: ObjectStore,
    key: str,
    *,
    current: Callable[[bytes], bool],
    render: Callable[[], bytes],
) -> PointerOutcome:
    """Write ``render()`` at ``key`` unless what is stored there is ``current`` (exactly
    what the ledger says), with S3 conditional writes: ``If-None-Match: *`` to create,
    ``If-Match`` on the ETag read to replace; a writer that lost the race reads again.
    At most ``MAX_POINTER_BYTES`` + 1 bytes are read: a larger object is not ``current``
    (it is no pointer) and is replaced the same way."""
    for _ in range(MAX_ATTEMPTS):
        stored = store.get_versioned(key, max_bytes=MAX_POINTER_BYTES)
        if stored is not None and current(stored[0]):
            return PointerOutcome.CURRENT
        data = render()
        try:
            if stored is None:
                store.create(key, data)
            else:
                store.replace(key, data, if_match=stored[1])
        except (ObjectExistsError, StaleVersionError):
            continue  # another writer got there first: read what it wrote
        return PointerOutcome.WRITTEN
    raise LostRaceError(
        f"{key}: lost {MAX_ATTEMPTS} conditional writes in a row to other writers; "
        "the registration is retried"
    )


def read_pointer(
    lineage: LineageId, sort_key: str, *, ledger: LedgerStore, store: ObjectStore
) -> LatestPointer:
    """The pointer of the snapshot at ``sort_key``, from its ledger record and manifest."""
    record = ledger.load(lineage, [sort_key]).snapshots.get(sort_key)
    if record is None:
        raise LostRaceError(f"{lineage}: the latest snapshot's record {sort_key} is not there")
    manifest = ManifestV1.model_validate_json(
        store.get(record.manifest_key, max_bytes=MAX_MANIFEST_BYTES)
    )
    return LatestPointer.of(record, manifest)


def _readable(model: type[PointerT], raw: bytes) -> PointerT | None:
    """The stored pointer, or None when it is not one (it is then replaced)."""
    try:
        return parse_pointer(model, raw)
    except PointerUnreadableError:
        return None


def publish_generation(
    streams: StreamLogStore,
    stream: str,
    *,
    store: ObjectStore,
    known: StreamState | None = None,
) -> PointerOutcome:
    """Make ``snapshots/{stream}/generation.json`` exactly the pointer of the stream's
    newest completed generation in its log, as ``latest.json``: anything else stored there
    (not a pointer, another stream's, a generation the log has not completed, members
    that differ) is replaced with conditional writes; never backwards, since the log's
    newest completed generation never goes back (one past ``known``'s makes it read the
    stream's HEAD again, consistently).

    Registration calls it after the commit that completed a generation, and for a
    redelivered manifest of a member that counted (its first delivery may have crashed
    before writing it): the same catch-up as ``latest.json``'s. ``known``: the stream's
    state the registration committed or loaded (else it is read, one BatchGetItem).
    """
    state = known if known is not None else streams.load(stream)
    if not state.head.completed_generations:
        return PointerOutcome.NO_LATEST
    newest = state.head.completed_generations[0]
    pointer: GenerationPointer | None = None

    def expected() -> GenerationPointer:
        nonlocal pointer
        if pointer is None:
            generation = state.generations.get(newest)
            if generation is None:
                generation = streams.load(stream, (newest,)).generations.get(newest)
            if generation is None:
                raise LostRaceError(f"{stream}: generation {newest}'s record is not there")
            pointer = GenerationPointer.of(generation)
        return pointer

    def current(raw: bytes) -> bool:
        nonlocal state, newest, pointer
        stored = _readable(GenerationPointer, raw)
        if stored is None or stored.stream_problem(stream):
            return False  # not a pointer, or not this stream's: replaced
        if stored.generation > newest:
            # It claims a newer generation than the state held: only the log can say so.
            fresh = streams.load(stream)
            completed = fresh.head.completed_generations
            if completed and completed[0] > newest:
                state, newest, pointer = fresh, completed[0], None
        return stored.generation == newest and stored == expected()

    def render() -> bytes:
        return expected().model_dump_json(exclude_none=False).encode()

    key = generation_pointer_key(stream)
    return publish_unless_current(store, key, current=current, render=render)
