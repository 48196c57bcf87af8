"""The ``s3://bucket[/prefix]`` blob store (boto3): a snapshot's files put with their
checksums, so S3 verifies each on arrival and refuses bytes that do not match.

Up to ``multipart_threshold`` bytes a file goes up as one PutObject, above it as a
multipart upload; which checksum each request sends, per algorithm, and which one S3
stores: the table in ``snapledger.client.storage``. Either way the object is created only if
absent: the PutObject, or the CompleteMultipartUpload, carries ``If-None-Match: *``, so S3
refuses it (412) when the key exists (ObjectExistsError, the object there untouched; a
refused multipart upload is aborted).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.object_keys import check_key
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.adapters.s3_location import EXISTS
from snapledger.client.blob_store import (
    CHUNK_BYTES,
    MIB,
    FileSource,
    ListsAndDownloads,
    StoredObject,
    format_checksum,
    source_chunks,
    source_size,
)
from snapledger.core.checksums import Checksum, Hasher
from snapledger.errors import (
    InvalidRequestError,
    NotFoundError,
    ObjectExistsError,
    SnapledgerError,
    StoreUnavailableError,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Files above this many bytes go up as a multipart upload.
DEFAULT_MULTIPART_THRESHOLD = 64 * MIB
#: Bytes per part of a multipart upload (more for files over 10,000 parts of it).
DEFAULT_PART_SIZE = 16 * MIB
#: S3's least part size (every part but the last) and most parts per upload.
MIN_PART_SIZE = 5 * MIB
MAX_PARTS = 10_000
#: S3's name of each algorithm it stores as an additional checksum.
_S3_ALGORITHM = {"crc32c": "CRC32C", "crc64nvme": "CRC64NVME", "sha256": "SHA256"}
#: The algorithms S3 can store as one checksum of a whole multipart object.
_FULL_OBJECT = frozenset({"crc32c", "crc64nvme"})
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_BAD_DIGEST = frozenset({"BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch"})


class S3BlobStore(ListsAndDownloads):
    """The ``s3://bucket/prefix`` store: reads and conditional creates through the
    adapters' ``S3ObjectStore``; file puts with their checksums, multipart above
    ``multipart_threshold`` bytes (see the table in ``snapledger.client.storage``)."""

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
        verifies the checksum sent with the bytes and refuses them if it differs, and
        creates the object only if the key is absent (ObjectExistsError otherwise)."""
        Hasher(checksum_algorithm)  # an unknown algorithm fails before any request
        if source_size(source) > self._threshold:
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
        data = b"".join(source_chunks(source, CHUNK_BYTES))
        checksum = _checksum_of(algorithm, data)
        with self._s3_errors("put", key):
            self._client.put_object(
                Bucket=self._bucket,
                Key=self._full(key),
                Body=data,
                IfNoneMatch="*",
                **_sent_checksum(checksum),
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
            for number, chunk in enumerate(source_chunks(source, self._part_size_for(source)), 1):
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
                    IfNoneMatch="*",  # S3 checks it here: the object appears on completion
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
        return max(self._part_size, -(-source_size(source) // MAX_PARTS))

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
    if code in EXISTS:
        return ObjectExistsError(
            f"{where}: the object already exists (S3 answered {code}): it was not overwritten"
        )
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
