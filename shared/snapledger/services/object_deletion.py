"""Listing and deleting a prefix's objects in as few requests as S3 allows.

One listing per 1,000 objects, one batch delete per 1,000 keys (the floor the benchmark
``s3_requests_per_expired_snapshot`` measures against). Manifests go in the last batch:
while a large prefix is half deleted its manifest is still there to say what it was; the
ledger (EXPIRING before the first delete) is what makes the deletion resumable.
"""

from __future__ import annotations

from collections.abc import Sequence

from snapledger.errors import StoreUnavailableError
from snapledger.layout import MANIFEST_NAME
from snapledger.ports import MAX_KEYS_PER_REQUEST, ObjectInfo, ObjectStore


class DeletionFailedError(StoreUnavailableError):
    """Some objects could not be deleted; the snapshot stays EXPIRING and is retried."""


def list_prefix(store: ObjectStore, prefix: str) -> list[ObjectInfo]:
    """Every object under ``prefix``, one request per 1,000."""
    found: list[ObjectInfo] = []
    after: str | None = None
    while True:
        page = store.list_page(prefix, start_after=after, limit=MAX_KEYS_PER_REQUEST)
        found += page
        if len(page) < MAX_KEYS_PER_REQUEST:
            return found
        after = page[-1].key


def delete_objects(store: ObjectStore, keys: Sequence[str]) -> int:
    """Delete ``keys`` (manifests last); the number deleted, or DeletionFailedError."""
    if not keys:
        return 0
    ordered = sorted(keys, key=lambda key: (key.endswith("/" + MANIFEST_NAME), key))
    result = store.delete_many(ordered)
    if result.failed:
        shown = "; ".join(f"{key}: {why}" for key, why in result.failed[:3])
        raise DeletionFailedError(
            f"{len(result.failed)} of {len(ordered)} objects could not be deleted ({shown}); "
            "the next GC run retries them: check the function's delete permissions"
        )
    return len(result.deleted)


def delete_prefix(store: ObjectStore, prefix: str) -> int:
    """Delete everything under ``prefix``: one listing, then the batch deletes."""
    return delete_objects(store, [info.key for info in list_prefix(store, prefix)])
