"""The ``file:///dir`` blob store: a local directory, the local runtime's stand-in for S3.

S3 makes an object visible whole; this store writes a temp file beside the target (named
``.tmp-...``, which listings and the local runtime skip) and links it into place (a file put)
or renames it (a download), so a reader never sees half a file. A file put creates only: the
hard link fails if the key exists, as S3's ``If-None-Match: *`` does.
"""

from __future__ import annotations

from collections.abc import Iterator

from snapledger.adapters.object_keys import check_key
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client.blob_store import (
    CHUNK_BYTES,
    FileSource,
    ListsAndDownloads,
    StoredObject,
    source_chunks,
    write_atomically,
)
from snapledger.errors import NotFoundError, ObjectExistsError


class FileBlobStore(ListsAndDownloads):
    """The ``file:///dir`` store: reads and conditional creates through the adapters'
    ``FileObjectStore``; file puts and downloads are streamed, temp file then rename."""

    _objects: FileObjectStore

    def __init__(self, objects: FileObjectStore) -> None:
        self._objects = objects

    @property
    def uri(self) -> str:
        return self._objects.uri

    def put_file(self, key: str, source: FileSource, *, checksum_algorithm: str) -> StoredObject:
        """Copy ``source`` to ``key`` atomically, only if ``key`` is absent (else
        ObjectExistsError, the file there untouched); the checksum is of the bytes copied."""
        target = self._objects.root / check_key(key)
        try:
            size, checksum = write_atomically(
                target, source_chunks(source, CHUNK_BYTES), checksum_algorithm, exclusive=True
            )
        except FileExistsError as exc:
            raise ObjectExistsError(
                f"object {key!r} already exists in {self.uri}: it was not overwritten"
            ) from exc
        return StoredObject(key=key, size=size, checksum=checksum)

    def put_if_absent(self, key: str, data: bytes) -> None:
        """Exclusive create (temp file, then a hard link that fails if the key exists)."""
        self._objects.create(key, data)

    def get(self, key: str) -> bytes:
        return self._objects.get(key)

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        path = self._objects.root / check_key(key)
        try:
            handle = path.open("rb")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFoundError(f"object {key!r} does not exist in {self.uri}") from exc
        with handle:
            while chunk := handle.read(CHUNK_BYTES):
                yield chunk
