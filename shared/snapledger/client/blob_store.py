"""What a client blob store is: the interface the writer and reader use (:class:`BlobStore`),
what it answers (:class:`StoredObject`, :class:`ListedObject`), how a checksum is spelled
in a manifest (``{algorithm}:{base64}``), and what both stores do alike (chunked reads of a
source, atomic local writes, downloads and listings over their adapter).

The stores: ``blob_store_file`` (``file:///dir``) and ``blob_store_s3`` (``s3://``); which
one a root opens: ``storage.open_store``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from snapledger.adapters.object_keys import TEMP_PREFIX
from snapledger.core.checksums import Checksum, Hasher
from snapledger.ports import ObjectStore

MIB = 1024 * 1024
#: Bytes read at a time when a file is checksummed, copied or downloaded.
CHUNK_BYTES = 8 * MIB

#: A file to store: a local path, or its bytes.
FileSource = str | os.PathLike[str] | bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class StoredObject:
    """A file as put or downloaded: its key, its size in bytes and, when one was asked
    for, its checksum ``{algorithm}:{base64}`` (what a manifest lists)."""

    key: str
    size: int
    checksum: str | None


class ListedObject(NamedTuple):
    """One object of a listing."""

    key: str
    size: int


class BlobStore(Protocol):
    """What the writer and reader need of a store; keys are relative to its root."""

    @property
    def uri(self) -> str:
        """The root, as a URI."""
        ...

    def put_file(self, key: str, source: FileSource, *, checksum_algorithm: str) -> StoredObject:
        """Store ``source`` at ``key`` only if ``key`` is absent (ObjectExistsError
        otherwise, the object there left as it was), with its checksum verified by the
        store on arrival where it can (S3)."""
        ...

    def put_if_absent(self, key: str, data: bytes) -> None:
        """Store ``data`` only if ``key`` is absent; ObjectExistsError otherwise."""
        ...

    def get(self, key: str) -> bytes:
        """The object's bytes; NotFoundError if absent."""
        ...

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        """The object's bytes in chunks of at most ``CHUNK_BYTES``; NotFoundError if absent."""
        ...

    def download(
        self, key: str, path: str | os.PathLike[str], *, checksum_algorithm: str | None = None
    ) -> StoredObject:
        """Copy the object to the local ``path`` atomically, with its checksum if asked."""
        ...

    def list(self, prefix: str) -> list[ListedObject]:
        """Every object under ``prefix``, in key order."""
        ...


# -- checksums ---------------------------------------------------------------------------


def file_checksum(source: FileSource, algorithm: str) -> str:
    """``{algorithm}:{base64 digest}`` of a local file or of bytes, read in 8 MiB chunks.

    ``algorithm`` is one a manifest may name (crc32c, crc64nvme, sha256, md5); another
    raises ``core.checksums.ChecksumError``.
    """
    hasher = Hasher(algorithm)
    for chunk in source_chunks(source, CHUNK_BYTES):
        hasher.update(chunk)
    return format_checksum(hasher.checksum())


def format_checksum(checksum: Checksum) -> str:
    """The manifest spelling of a checksum: ``{algorithm}:{base64}`` (S3's form)."""
    return f"{checksum.algorithm}:{checksum.s3_form}"


def source_chunks(source: FileSource, size: int) -> Iterator[bytes]:
    """``source``'s bytes in chunks of at most ``size`` (none for an empty source)."""
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source).cast("B")
        for offset in range(0, len(view), size):
            yield bytes(view[offset : offset + size])
        return
    with Path(source).open("rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def source_size(source: FileSource) -> int:
    if isinstance(source, bytes | bytearray | memoryview):
        return memoryview(source).nbytes
    return Path(source).stat().st_size


def write_atomically(
    target: Path, chunks: Iterable[bytes], algorithm: str | None, *, exclusive: bool = False
) -> tuple[int, str | None]:
    """Write ``chunks`` to a temp file beside ``target``, then rename it into place, so
    ``target`` is never seen half-written; returns the size and, if asked, the checksum
    of exactly the bytes written. ``exclusive``: hard-link it into place instead, which
    fails (FileExistsError, ``target`` untouched) if ``target`` exists, atomically across
    threads and processes."""
    hasher = Hasher(algorithm) if algorithm is not None else None
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
    size = 0
    try:
        with temp.open("xb") as handle:
            for chunk in chunks:
                handle.write(chunk)
                size += len(chunk)
                if hasher is not None:
                    hasher.update(chunk)
        if exclusive:
            os.link(temp, target)
        else:
            os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return size, format_checksum(hasher.checksum()) if hasher is not None else None


class ListsAndDownloads:
    """What both stores do alike over their adapter (``_objects``) and ``iter_chunks``."""

    _objects: ObjectStore

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        raise NotImplementedError

    def download(
        self, key: str, path: str | os.PathLike[str], *, checksum_algorithm: str | None = None
    ) -> StoredObject:
        """Stream ``key`` to ``path`` (temp file, then rename); its size and checksum."""
        size, checksum = write_atomically(Path(path), self.iter_chunks(key), checksum_algorithm)
        return StoredObject(key=key, size=size, checksum=checksum)

    def list(self, prefix: str) -> list[ListedObject]:
        return [ListedObject(info.key, info.size) for info in self._objects.list(prefix)]
