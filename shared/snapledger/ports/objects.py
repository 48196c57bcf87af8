"""Object store ports: listing, reading, writing and deleting objects under a root, and
legal holds on them. Adapters: ``adapters/object_store_s3.py`` and
``adapters/object_store_file.py``."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

#: S3's DeleteObjects and ListObjectsV2 limit; file:// keeps the same batching.
MAX_KEYS_PER_REQUEST = 1000


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One stored object, as a listing returns it."""

    key: str
    size: int
    last_modified: datetime
    #: S3's ETag as the listing gives it (it changes when the object is written again with
    #: other content); None where the store has none (the file store).
    etag: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What a batch delete did: keys deleted (or already absent) and per-key failures."""

    deleted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (key, reason)


class ObjectStore(Protocol):
    """An object store rooted at a URI (``s3://bucket/prefix`` or ``file:///dir``).

    Keys are relative to the root and use '/' separators.
    """

    @property
    def uri(self) -> str: ...

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` in key order, one request per 1,000 keys."""
        ...

    def list_page(
        self, prefix: str, *, start_after: str | None = None, limit: int = MAX_KEYS_PER_REQUEST
    ) -> builtins.list[ObjectInfo]:
        """One page (one request) of at most ``limit`` objects after ``start_after``."""
        ...

    def list_dirs(self, prefix: str) -> Iterator[str]:
        """The immediate sub-prefixes of ``prefix`` (each ending in '/')."""
        ...

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes. NotFoundError if absent; ManifestTooLargeError-style
        InvalidRequestError if ``max_bytes`` is given and exceeded."""
        ...

    def get_tail(self, key: str, length: int) -> bytes:
        """The object's last ``length`` bytes (all of it when shorter): one ranged GET.
        NotFoundError if absent."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """The object's info, or None if absent."""
        ...

    def stored_checksum(self, key: str, algorithm: str) -> bytes | None:
        """The ``algorithm`` digest the store holds for the object (S3: its additional
        checksum, one HeadObject), or None when it holds none of that algorithm (or only a
        composite one of a multipart upload). NotFoundError if the object is absent."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Write (overwrite) an object."""
        ...

    def create(self, key: str, data: bytes) -> None:
        """Write only if absent (S3 ``IfNoneMatch: *``); ObjectExistsError otherwise."""
        ...

    def get_versioned(self, key: str, *, max_bytes: int | None = None) -> tuple[bytes, str] | None:
        """The object's bytes and its version tag (S3: its ETag), or None if absent: one
        GET. The tag is what ``replace`` must be given to overwrite exactly this version.
        With ``max_bytes``, at most ``max_bytes + 1`` bytes are read (more than ``max_bytes``
        means the object is larger); the tag is still the whole object's."""
        ...

    def replace(self, key: str, data: bytes, *, if_match: str) -> None:
        """Overwrite the object only if it is still the version ``if_match`` names (S3
        ``IfMatch``); StaleVersionError when it changed or is gone."""
        ...

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        """Delete keys in batches of at most 1,000 per request; absent keys count as deleted."""
        ...


class ObjectHolds(Protocol):
    """Legal holds on stored objects (S3 Object Lock; docs/deploy.md, "The latest protected
    in the bucket"). A held object version cannot be deleted by anyone, nor expired by a
    lifecycle rule, until its hold is released; a delete without a version id still hides
    it behind a delete marker."""

    def hold(self, key: str) -> None:
        """Put a legal hold on the object's current version (idempotent). NotFoundError if
        the object is absent."""
        ...

    def release_holds(self, prefix: str) -> int:
        """Release the hold of every version of every object under ``prefix`` (current or
        not; idempotent): the number of versions released."""
        ...


def chunked(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Split ``items`` into lists of at most ``size``."""
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
