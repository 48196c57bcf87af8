"""The client's blob store: put a snapshot's files with their checksums, read them back.

One small interface (:class:`BlobStore`) over two stores, chosen by the root URI
(:func:`open_store`): ``s3://bucket[/prefix]`` (boto3) and ``file:///dir`` (a local
directory, the local runtime's stand-in for S3). Keys are relative to the root and follow
the object-store key rules of ``snapledger.adapters`` (the same keys work on both).

**Checksums.** Every data file goes up with a checksum computed here, before or while it
is sent (:func:`file_checksum`; CRC32C and CRC64NVME on the AWS CRT, SHA-256 and MD5 on
hashlib, through ``snapledger.core.checksums.Hasher``), written ``{algorithm}:{base64}``:
the big-endian digest in base64, the form S3 itself returns (``ChecksumCRC32C`` ...) and
one that ``core.checksums.parse_checksum`` reads. On S3 the checksum is sent with the
bytes, so S3 verifies it on arrival and refuses bytes that do not match:

- crc32c, crc64nvme: up to the threshold, one PutObject with ``Checksum{ALG}``, which S3
  stores; above it, a multipart upload of ``ChecksumType=FULL_OBJECT``, each part with its
  CRC and the completion with the whole file's, which S3 stores.
- sha256: up to the threshold, ``ChecksumSHA256``, which S3 stores; above it, COMPOSITE (S3
  has no full-object SHA-256): each part is verified, and S3 stores a checksum of the
  parts' checksums (``...-N``), not the file's.
- md5: ``Content-MD5`` on the PutObject, or on each part: verified, never stored.

Registration compares a manifest's checksum with the one S3 stored only when S3 stored
the whole file's (``stored_checksum`` skips COMPOSITE "-N" values and md5): use crc32c or
crc64nvme (the default is crc32c) so that every file, of any size, is compared at
registration; sha256 above the multipart threshold and md5 are verified by S3 on upload
and by :class:`~snapledger.client.reader.SnapshotReader` on read, but not at registration.

**Atomic writes.** S3 makes an object visible whole. The ``file://`` store writes a temp
file beside the target (named ``.tmp-...``, which listings and the local runtime skip) and
renames it into place, so a reader never sees half a file.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.object_store import open_object_store
from snapledger.adapters.object_store_file import TEMP_PREFIX, FileObjectStore, check_key
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.core.checksums import Checksum, Hasher
from snapledger.errors import (
    InvalidRequestError,
    NotFoundError,
    SnapledgerError,
    StoreUnavailableError,
)
from snapledger.ports import ObjectStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MIB = 1024 * 1024
#: Files above this many bytes go up as a multipart upload.
DEFAULT_MULTIPART_THRESHOLD = 64 * MIB
#: Bytes per part of a multipart upload (more for files over 10,000 parts of it).
DEFAULT_PART_SIZE = 16 * MIB
#: S3's least part size (every part but the last) and most parts per upload.
MIN_PART_SIZE = 5 * MIB
MAX_PARTS = 10_000
#: Bytes read at a time when a file is checksummed, copied or downloaded.
CHUNK_BYTES = 8 * MIB

#: A file to store: a local path, or its bytes.
FileSource = str | os.PathLike[str] | bytes | bytearray | memoryview

#: S3's name of each algorithm it stores as an additional checksum.
_S3_ALGORITHM = {"crc32c": "CRC32C", "crc64nvme": "CRC64NVME", "sha256": "SHA256"}
#: The algorithms S3 can store as one checksum of a whole multipart object.
_FULL_OBJECT = frozenset({"crc32c", "crc64nvme"})
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_BAD_DIGEST = frozenset({"BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch"})


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
        """Store ``source`` at ``key`` (overwriting), with its checksum verified by the
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


def open_store(
    root: str,
    *,
    s3_client: S3Client | None = None,
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
    part_size: int = DEFAULT_PART_SIZE,
) -> BlobStore:
    """The store for ``root``: ``s3://bucket[/prefix]``, ``file:///dir`` or ``/dir``.

    ``s3_client`` is used for S3 roots (default: ``boto3.client("s3")``);
    ``multipart_threshold`` and ``part_size`` apply to S3 only. A root of another form
    raises InvalidRequestError naming the forms accepted.
    """
    if urlsplit(root).scheme == "s3":
        client = s3_client if s3_client is not None else boto3.client("s3")
        objects = open_object_store(root, s3_client=client)
        assert isinstance(objects, S3ObjectStore)  # the scheme decides the store
        bucket, _, prefix = objects.uri.removeprefix("s3://").partition("/")
        return S3BlobStore(
            bucket,
            prefix,
            client,
            multipart_threshold=multipart_threshold,
            part_size=part_size,
        )
    objects = open_object_store(root)
    assert isinstance(objects, FileObjectStore)  # any other accepted root is a directory
    return FileBlobStore(objects)


# -- checksums ---------------------------------------------------------------------------


def file_checksum(source: FileSource, algorithm: str) -> str:
    """``{algorithm}:{base64 digest}`` of a local file or of bytes, read in 8 MiB chunks.

    ``algorithm`` is one a manifest may name (crc32c, crc64nvme, sha256, md5); another
    raises ``core.checksums.ChecksumError``.
    """
    hasher = Hasher(algorithm)
    for chunk in _chunks(source, CHUNK_BYTES):
        hasher.update(chunk)
    return format_checksum(hasher.checksum())


def format_checksum(checksum: Checksum) -> str:
    """The manifest spelling of a checksum: ``{algorithm}:{base64}`` (S3's form)."""
    return f"{checksum.algorithm}:{checksum.s3_form}"


def _chunks(source: FileSource, size: int) -> Iterator[bytes]:
    """``source``'s bytes in chunks of at most ``size`` (none for an empty source)."""
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source).cast("B")
        for offset in range(0, len(view), size):
            yield bytes(view[offset : offset + size])
        return
    with Path(source).open("rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def _source_size(source: FileSource) -> int:
    if isinstance(source, bytes | bytearray | memoryview):
        return memoryview(source).nbytes
    return Path(source).stat().st_size


def _write_atomically(
    target: Path, chunks: Iterable[bytes], algorithm: str | None
) -> tuple[int, str | None]:
    """Write ``chunks`` to a temp file beside ``target``, then rename it into place, so
    ``target`` is never seen half-written; returns the size and, if asked, the checksum
    of exactly the bytes written."""
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
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return size, format_checksum(hasher.checksum()) if hasher is not None else None


class _ListsAndDownloads:
    """What both stores do alike over their adapter (``_objects``) and ``iter_chunks``."""

    _objects: ObjectStore

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        raise NotImplementedError

    def download(
        self, key: str, path: str | os.PathLike[str], *, checksum_algorithm: str | None = None
    ) -> StoredObject:
        """Stream ``key`` to ``path`` (temp file, then rename); its size and checksum."""
        size, checksum = _write_atomically(Path(path), self.iter_chunks(key), checksum_algorithm)
        return StoredObject(key=key, size=size, checksum=checksum)

    def list(self, prefix: str) -> list[ListedObject]:
        return [ListedObject(info.key, info.size) for info in self._objects.list(prefix)]


# -- file:// -----------------------------------------------------------------------------


class FileBlobStore(_ListsAndDownloads):
    """The ``file:///dir`` store: reads and conditional creates through the adapters'
    ``FileObjectStore``; file puts and downloads are streamed, temp file then rename."""

    _objects: FileObjectStore

    def __init__(self, objects: FileObjectStore) -> None:
        self._objects = objects

    @property
    def uri(self) -> str:
        return self._objects.uri

    def put_file(self, key: str, source: FileSource, *, checksum_algorithm: str) -> StoredObject:
        """Copy ``source`` to ``key`` atomically; the checksum is of the bytes copied."""
        target = self._objects.root / check_key(key)
        size, checksum = _write_atomically(target, _chunks(source, CHUNK_BYTES), checksum_algorithm)
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


# -- s3:// -------------------------------------------------------------------------------


class S3BlobStore(_ListsAndDownloads):
    """The ``s3://bucket/prefix`` store: reads and conditional creates through the
    adapters' ``S3ObjectStore``; file puts with their checksums, multipart above
    ``multipart_threshold`` bytes (see the module's table)."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        client: S3Client,
        *,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        part_size: int = DEFAULT_PART_SIZE,
    ) -> None:
        if multipart_threshold < 1:
            raise ValueError(f"multipart_threshold={multipart_threshold}: use 1 byte or more")
        if part_size < MIN_PART_SIZE:
            raise ValueError(
                f"part_size={part_size}: S3 refuses parts under {MIN_PART_SIZE} bytes (5 MiB) "
                "but the last; use 5 MiB or more"
            )
        self._objects = S3ObjectStore(bucket, prefix, client=client)
        self._bucket = bucket
        stripped = prefix.strip("/")
        self._prefix = f"{stripped}/" if stripped else ""  # S3ObjectStore checked it
        self._client = client
        self._threshold = multipart_threshold
        self._part_size = part_size

    @property
    def uri(self) -> str:
        return self._objects.uri

    def put_file(self, key: str, source: FileSource, *, checksum_algorithm: str) -> StoredObject:
        """One PutObject up to the threshold, else a multipart upload; either way S3
        verifies the checksum sent with the bytes and refuses them if it differs."""
        Hasher(checksum_algorithm)  # an unknown algorithm fails before any request
        if _source_size(source) > self._threshold:
            return self._put_multipart(key, source, checksum_algorithm)
        return self._put_single(key, source, checksum_algorithm)

    def put_if_absent(self, key: str, data: bytes) -> None:
        """One PutObject with ``IfNoneMatch='*'``; ObjectExistsError if the key exists."""
        self._objects.create(key, data)

    def get(self, key: str) -> bytes:
        return self._objects.get(key)

    def iter_chunks(self, key: str) -> Iterator[bytes]:
        """One GetObject, its body streamed."""
        with self._s3_errors("get", key):
            response = self._client.get_object(Bucket=self._bucket, Key=self._full(key))
            yield from response["Body"].iter_chunks(CHUNK_BYTES)

    # -- uploads -------------------------------------------------------------------------

    def _put_single(self, key: str, source: FileSource, algorithm: str) -> StoredObject:
        data = b"".join(_chunks(source, CHUNK_BYTES))
        checksum = _checksum_of(algorithm, data)
        with self._s3_errors("put", key):
            self._client.put_object(
                Bucket=self._bucket, Key=self._full(key), Body=data, **_sent_checksum(checksum)
            )
        return StoredObject(key=key, size=len(data), checksum=format_checksum(checksum))

    def _put_multipart(self, key: str, source: FileSource, algorithm: str) -> StoredObject:
        """Parts of ``_part_size_for`` bytes, each with its own checksum; the whole file's
        checksum is taken in the same pass and, for a CRC, sent as the FULL_OBJECT one."""
        full = self._full(key)
        with self._s3_errors("start a multipart upload of", key):
            upload_id = self._client.create_multipart_upload(
                Bucket=self._bucket, Key=full, **_multipart_start(algorithm)
            )["UploadId"]
        try:
            whole = Hasher(algorithm)
            parts: list[dict[str, Any]] = []
            size = 0
            for number, chunk in enumerate(_chunks(source, self._part_size_for(source)), 1):
                whole.update(chunk)
                size += len(chunk)
                parts.append(self._upload_part(key, upload_id, number, chunk, algorithm))
            checksum = whole.checksum()
            with self._s3_errors("complete the multipart upload of", key):
                self._client.complete_multipart_upload(
                    Bucket=self._bucket,
                    Key=full,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
                    **_multipart_complete(checksum),
                )
        except BaseException:
            with suppress(ClientError, BotoCoreError):  # S3 also expires it (lifecycle rule)
                self._client.abort_multipart_upload(
                    Bucket=self._bucket, Key=full, UploadId=upload_id
                )
            raise
        return StoredObject(key=key, size=size, checksum=format_checksum(checksum))

    def _upload_part(
        self, key: str, upload_id: str, number: int, chunk: bytes, algorithm: str
    ) -> dict[str, Any]:
        """Upload one part with its checksum; returns its entry for CompleteMultipartUpload."""
        sent = _sent_checksum(_checksum_of(algorithm, chunk))
        with self._s3_errors(f"upload part {number} of", key):
            response = self._client.upload_part(
                Bucket=self._bucket,
                Key=self._full(key),
                UploadId=upload_id,
                PartNumber=number,
                Body=chunk,
                **sent,
            )
        stored = {
            name: value
            for name, value in sent.items()
            if name.startswith("Checksum") and name != "ChecksumAlgorithm"
        }
        return {"ETag": response["ETag"], "PartNumber": number, **stored}

    def _part_size_for(self, source: FileSource) -> int:
        """The configured part size, or more when the file needs over 10,000 such parts."""
        return max(self._part_size, -(-_source_size(source) // MAX_PARTS))

    def _full(self, key: str) -> str:
        return self._prefix + check_key(key)

    @contextmanager
    def _s3_errors(self, action: str, key: str) -> Iterator[None]:
        """Turn botocore errors raised inside the block into snapledger errors."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            raise _translated(exc, f"{action} {key!r} in {self.uri}") from exc


def _checksum_of(algorithm: str, data: bytes) -> Checksum:
    hasher = Hasher(algorithm)
    hasher.update(data)
    return hasher.checksum()


def _sent_checksum(checksum: Checksum) -> dict[str, Any]:
    """The PutObject/UploadPart arguments that make S3 verify ``checksum`` on arrival."""
    if checksum.algorithm == "md5":
        return {"ContentMD5": checksum.s3_form}
    name = _S3_ALGORITHM[checksum.algorithm]
    # ChecksumAlgorithm too: with the value alone botocore omits x-amz-sdk-checksum-algorithm.
    return {"ChecksumAlgorithm": name, f"Checksum{name}": checksum.s3_form}


def _multipart_start(algorithm: str) -> dict[str, Any]:
    if algorithm in _FULL_OBJECT:
        return {"ChecksumAlgorithm": _S3_ALGORITHM[algorithm], "ChecksumType": "FULL_OBJECT"}
    if algorithm in _S3_ALGORITHM:
        return {"ChecksumAlgorithm": _S3_ALGORITHM[algorithm], "ChecksumType": "COMPOSITE"}
    return {}  # md5: each part's Content-MD5 is verified; S3 stores no MD5 of the whole


def _multipart_complete(checksum: Checksum) -> dict[str, Any]:
    if checksum.algorithm in _FULL_OBJECT:
        name = _S3_ALGORITHM[checksum.algorithm]
        return {"ChecksumType": "FULL_OBJECT", f"Checksum{name}": checksum.s3_form}
    return {}  # COMPOSITE: S3 derives the object's value from the parts' checksums


def _translated(exc: ClientError | BotoCoreError, where: str) -> SnapledgerError:
    if not isinstance(exc, ClientError):
        return StoreUnavailableError(
            f"{where} failed before S3 answered ({exc}): check the network, endpoint and "
            "credentials, then try again"
        )
    code = _error_field(exc, "Code")
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    if code in _NOT_FOUND:
        return NotFoundError(f"{where}: no such object")
    if code in _BAD_DIGEST:
        return InvalidRequestError(
            f"{where}: S3 refused the bytes, they do not match the checksum taken before the "
            f"upload ({code}): the file changed while it was uploaded; write it again"
        )
    return StoreUnavailableError(
        f"{where}: S3 answered {code or 'an error'} (HTTP {status}): "
        f"{_error_field(exc, 'Message')}. "
        "Check the bucket, the caller's permissions (s3:PutObject, s3:GetObject, "
        "s3:ListBucket, s3:AbortMultipartUpload) and try again"
    )


def _error_field(exc: ClientError, field: str) -> str:
    return str(exc.response.get("Error", {}).get(field, ""))
