"""Publish a lineage's latest snapshot as ``snapshots/{stream}/{partition}/latest.json``,
and a stream's newest completed stream snapshot as ``snapshots/{stream}/generation.json``.

Registration calls ``publish_latest`` after every commit that made a snapshot latest and
for every redelivered manifest (a duplicate), with the lineage's HEAD as it committed or
loaded it. It always publishes the ledger's latest, never the one an event named, so the
order deliveries arrive in does not matter:

- **never backwards**: the stored pointer is read first (one GET, with its ETag) and kept
  when it names the same or a newer snapshot (LSN, then snapshot id, the ledger's order);
  otherwise it is replaced with S3 conditional writes, ``If-None-Match: *`` to create and
  ``If-Match: <ETag>`` to replace, so of two writers racing, the one that read an older
  pointer loses and reads again;
- **converges after a crash between the commit and the write**: the manifest's message
  is then not deleted from the registration queue, so SQS delivers it again; its
  registration is a duplicate, which publishes the pointer again. A failed write fails
  the message the same way. After the queue's last attempt the message goes to its
  dead-letter queue (alarmed); any later snapshot of the lineage also repairs it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from snapledger.errors import LostRaceError, ObjectExistsError, StaleVersionError
from snapledger.layout import generation_pointer_key, latest_pointer_key
from snapledger.models.ledger import Head, LineageId, snapshot_sort_key
from snapledger.models.manifest import MAX_MANIFEST_BYTES, ManifestV1
from snapledger.models.pointer import GenerationPointer, LatestPointer
from snapledger.ports import LedgerStore, ObjectStore, StreamLogStore

#: Conditional writes lost to other writers before giving up (each loser reads again).
MAX_ATTEMPTS = 10
PointerT = TypeVar("PointerT", bound=BaseModel)


class PointerOutcome(StrEnum):
    WRITTEN = "written"  # latest.json now names the ledger's latest
    CURRENT = "current"  # it already named it (or a newer one): nothing written
    NO_LATEST = "no_latest"  # the lineage has no latest snapshot (the stream no generation)


def publish_latest(
    lineage: LineageId,
    head: Head,
    *,
    ledger: LedgerStore,
    store: ObjectStore,
    known: LatestPointer | None = None,
) -> PointerOutcome:
    """Make ``latest.json`` name ``head``'s latest snapshot unless it names a newer one.

    ``known``: the pointer, when the caller already has its record and manifest (the
    registration that made it latest); otherwise they are read (one BatchGetItem, one
    GET of the manifest), and only when the stored pointer is behind.
    """
    if head.latest_lsn is None or head.latest_snapshot_id is None:
        return PointerOutcome.NO_LATEST
    target = snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)
    key = latest_pointer_key(lineage.stream, lineage.partition)
    pointer = known if known is not None and known.sort_key == target else None

    def current(raw: bytes) -> bool:
        stored = _readable(LatestPointer, raw)
        return stored is not None and stored.sort_key >= target

    def render() -> bytes:
        nonlocal pointer
        if pointer is None:
            pointer = read_pointer(lineage, target, ledger=ledger, store=store)
        return pointer.model_dump_json(exclude_none=False).encode()

    return publish_unless_current(store, key, current=current, render=render)


def publish_unless_current(
    store: ObjectStore,
    key: str,
    *,
    current: Callable[[bytes], bool],
    render: Callable[[], bytes],
) -> PointerOutcome:
    """Write ``render()`` at ``key`` unless what is stored there is ``current`` (the same or
    newer), with S3 conditional writes: ``If-None-Match: *`` to create, ``If-Match`` on
    the ETag read to replace; a writer that lost the race reads again."""
    for _ in range(MAX_ATTEMPTS):
        stored = store.get_versioned(key)
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
        return model.model_validate_json(raw)
    except ValidationError:
        return None


def publish_generation(
    streams: StreamLogStore, stream: str, *, store: ObjectStore
) -> PointerOutcome:
    """Make ``snapshots/{stream}/generation.json`` name the stream's newest completed
    generation unless it names a newer one (never backwards, as ``latest.json``).

    Registration calls it after the commit that completed a generation, and for a
    redelivered manifest of a member that counted (its first delivery may have crashed
    before writing it): the same catch-up as ``latest.json``'s.
    """
    head = streams.get_head(stream)
    if head is None or not head.completed_generations:
        return PointerOutcome.NO_LATEST
    newest = head.completed_generations[0]

    def current(raw: bytes) -> bool:
        stored = _readable(GenerationPointer, raw)
        return stored is not None and stored.generation >= newest

    def render() -> bytes:
        generation = streams.get_generation(stream, newest)
        if generation is None:
            raise LostRaceError(f"{stream}: generation {newest}'s record is not there")
        return GenerationPointer.of(generation).model_dump_json(exclude_none=False).encode()

    key = generation_pointer_key(stream)
    return publish_unless_current(store, key, current=current, render=render)
