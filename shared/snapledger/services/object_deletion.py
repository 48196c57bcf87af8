"""Listing and deleting objects in as few requests as S3 allows.

One listing per 1,000 objects, one batch delete per 1,000 keys. Manifests go in the last
batch: while a large prefix is half deleted its manifest is still there to say what it
was; the ledger (EXPIRING before the first delete) is what makes the deletion resumable.

GC lists a lineage once (``list_lineage``): the whole ``snapshots/{stream}/{partition}/``
prefix (or its layout's root: a Restate partition's folder), grouped by snapshot prefix,
serves both the deletion of its EXPIRING snapshots
(every object in the prefix, strays included) and the orphan sweep. Snapshots GC will not
touch are skipped over rather than read: a page that ends inside one starts the next
listing after it, so a live snapshot costs at most one listing however big it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from snapledger.core.references import SHARED_FOLDER
from snapledger.errors import StoreUnavailableError
from snapledger.layouts.lineage import LineageLayout
from snapledger.ports import MAX_KEYS_PER_REQUEST, ObjectInfo, ObjectStore


class DeletionFailedError(StoreUnavailableError):
    """Some objects could not be deleted; the snapshot stays EXPIRING and is retried."""


def list_prefix(
    store: ObjectStore, prefix: str, *, stop: Callable[[], bool] | None = None
) -> list[ObjectInfo]:
    """Every object under ``prefix``, one request per 1,000; only the pages before ``stop``
    (asked before each request after the first) said so."""
    found: list[ObjectInfo] = []
    after: str | None = None
    while True:
        if after is not None and stop is not None and stop():
            return found
        page = store.list_page(prefix, start_after=after, limit=MAX_KEYS_PER_REQUEST)
        found += page
        if len(page) < MAX_KEYS_PER_REQUEST:
            return found
        after = page[-1].key


def delete_objects(
    store: ObjectStore, keys: Sequence[str], *, manifest_name: str | None = None
) -> int:
    """Delete ``keys`` (those named ``manifest_name``, a layout's manifest as its strategy
    names it, last; none: changelog segments); the number deleted, or DeletionFailedError."""
    if not keys:
        return 0
    ordered = sorted(keys, key=lambda key: (key.rpartition("/")[2] == manifest_name, key))
    result = store.delete_many(ordered)
    if result.failed:
        raise DeletionFailedError(failure_message(result.failed, len(ordered)))
    return len(result.deleted)


def failure_message(failed: Sequence[tuple[str, str]], total: int) -> str:
    """What went wrong deleting ``total`` objects, ``failed`` of them refused."""
    shown = "; ".join(f"{key}: {why}" for key, why in failed[:3])
    return (
        f"{len(failed)} of {total} objects could not be deleted ({shown}); "
        "the next GC run retries them: check the function's delete permissions"
    )


def list_lineage(
    store: ObjectStore,
    layout: LineageLayout,
    partition: int,
    *,
    skip: Callable[[str], bool],
    stop: Callable[[], bool],
    shared: list[ObjectInfo] | None = None,
) -> tuple[dict[str, list[ObjectInfo]], bool]:
    """The lineage's objects by snapshot prefix, leaving out the prefixes ``skip`` names.

    Keys outside any snapshot prefix (of ``layout``) are not ours and left out: a Restate
    partition's ``latest.json`` among them; those of the lineage's ``shared/`` folder go
    into ``shared`` when given (files several snapshots reference). ``stop`` is asked
    before every listing request; returns the objects and whether it stopped before the end.
    """
    root = layout.root(partition)
    shared_prefix = f"{root}{SHARED_FOLDER}/"
    prefixes: dict[str, str | None] = {}  # directory name -> its snapshot prefix, if one

    def prefix_of(key: str) -> str | None:
        name, slash, _ = key.removeprefix(root).partition("/")
        if not slash:
            return None
        if name not in prefixes:
            folder = layout.folder(partition, f"{root}{name}/")
            prefixes[name] = None if folder is None else folder.prefix  # None: not ours
        return prefixes[name]

    found: dict[str, list[ObjectInfo]] = {}
    after: str | None = None
    while True:
        if stop():
            return found, True
        page = store.list_page(root, start_after=after, limit=MAX_KEYS_PER_REQUEST)
        for info in page:
            prefix = prefix_of(info.key)
            if prefix is not None and not skip(prefix):
                found.setdefault(prefix, []).append(info)
            elif shared is not None and info.key.startswith(shared_prefix):
                shared.append(info)
        if len(page) < MAX_KEYS_PER_REQUEST:
            return found, False
        after = page[-1].key
        last = prefix_of(after)
        if last is not None and skip(last):
            # Past every key under it: "p/..." < "p0" < the next snapshot prefix.
            after = last[:-1] + chr(ord("/") + 1)
