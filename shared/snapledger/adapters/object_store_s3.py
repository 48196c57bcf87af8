"""The ``s3://bucket/prefix`` object store, on boto3.

Request counts are part of the contract (the register flow checks a snapshot with one
listing, GC deletes in batches): ``list`` costs one ListObjectsV2 per 1,000 keys,
``get`` one GetObject, ``delete_many`` one DeleteObjects per 1,000 keys. botocore's own
retry policy handles throttling; what is left after it is a StoreUnavailableError.
"""

from __future__ import annotations

import base64
import builtins
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.access_denied import ACCESS_DENIED_CODES
from snapledger.adapters.object_keys import check_key, check_prefix
from snapledger.adapters.s3_legal_holds import S3LegalHolds
from snapledger.adapters.s3_location import EXISTS, NOT_FOUND, S3Location, error_code
from snapledger.errors import (
    AccessDeniedError,
    InvalidRequestError,
    ManifestTooLargeError,
    NotFoundError,
    ObjectExistsError,
    StaleVersionError,
)
from snapledger.ports import MAX_KEYS_PER_REQUEST, DeleteResult, ObjectInfo, chunked

#: HeadObject's response field for each algorithm S3 stores as an additional checksum.
_CHECKSUM_FIELDS = {
    "crc64nvme": "ChecksumCRC64NVME",
    "crc32c": "ChecksumCRC32C",
    "sha256": "ChecksumSHA256",
}

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ListObjectsV2OutputTypeDef, ObjectTypeDef


class S3ObjectStore:
    """An ObjectStore over one S3 bucket and key prefix; keys are relative to the prefix."""

    def __init__(self, bucket: str, prefix: str = "", client: S3Client | None = None) -> None:
        self._at = S3Location(bucket, prefix)
        self._client: S3Client = client if client is not None else boto3.client("s3")
        self._holds = S3LegalHolds(self._client, self._at)

    @property
    def uri(self) -> str:
        return self._at.uri

    # -- reads -----------------------------------------------------------------------

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` in key order: one request per 1,000 keys."""
        token: str | None = None
        while True:
            response = self._list_request(prefix, start_after, MAX_KEYS_PER_REQUEST, token)
            for item in response.get("Contents", []):
                yield self._info(item)
            token = response.get("NextContinuationToken")
            if not response.get("IsTruncated") or token is None:
                return

    def list_page(
        self, prefix: str, *, start_after: str | None = None, limit: int = MAX_KEYS_PER_REQUEST
    ) -> builtins.list[ObjectInfo]:  # ``list`` is a method name in this class
        """One ListObjectsV2 request: at most ``limit`` objects after ``start_after``."""
        if not 1 <= limit <= MAX_KEYS_PER_REQUEST:
            raise InvalidRequestError(
                f"listing limit {limit} is out of range: use 1 to {MAX_KEYS_PER_REQUEST}"
            )
        response = self._list_request(prefix, start_after, limit, None)
        return [self._info(item) for item in response.get("Contents", [])]

    def list_dirs(self, prefix: str) -> Iterator[str]:
        """The immediate sub-prefixes of ``prefix`` (S3 common prefixes for '/')."""
        check_prefix(prefix)
        request: dict[str, Any] = {
            "Bucket": self._at.bucket,
            "Prefix": self._at.prefix + prefix,
            "Delimiter": "/",
            "MaxKeys": MAX_KEYS_PER_REQUEST,
        }
        while True:
            with self._at.translated("list", prefix):
                response = self._client.list_objects_v2(**request)
            for common in response.get("CommonPrefixes", []):
                yield self._at.relative(common["Prefix"])
            token = response.get("NextContinuationToken")
            if not response.get("IsTruncated") or token is None:
                return
            request["ContinuationToken"] = token

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """One GetObject; with ``max_bytes``, its ContentLength is checked before the body
        is read, so an oversized object is never downloaded."""
        with self._at.translated("get", key):
            response = self._client.get_object(Bucket=self._at.bucket, Key=self._at.full(key))
            body = response["Body"]
            size = response["ContentLength"]
            if max_bytes is not None and size > max_bytes:
                body.close()  # hand the connection back without draining the body
                raise ManifestTooLargeError(
                    f"object {key!r} is {size} bytes, over the {max_bytes}-byte limit: "
                    "write a smaller object (split it) or raise the limit"
                )
            return body.read()

    def get_tail(self, key: str, length: int) -> bytes:
        """One ranged GetObject of the last ``length`` bytes (a suffix range)."""
        if length <= 0:
            return b""
        with self._at.translated("get", key):
            response = self._client.get_object(
                Bucket=self._at.bucket, Key=self._at.full(key), Range=f"bytes=-{length}"
            )
            return response["Body"].read()

    def head(self, key: str) -> ObjectInfo | None:
        """One HeadObject: the object's info, or None if absent."""
        try:
            with self._at.translated("head", key):
                response = self._client.head_object(Bucket=self._at.bucket, Key=self._at.full(key))
        except NotFoundError:
            return None
        return ObjectInfo(
            key=key,
            size=response["ContentLength"],
            last_modified=_utc(response["LastModified"]),
        )

    def stored_checksum(self, key: str, algorithm: str) -> bytes | None:
        """One HeadObject with checksum mode: S3's additional checksum of ``algorithm``.
        A multipart upload's composite checksum (``ChecksumType`` COMPOSITE, '...-N') is
        not the whole object's digest, so it is None (unverifiable), as is an algorithm the
        object lacks."""
        field = _CHECKSUM_FIELDS.get(algorithm)
        if field is None:
            return None  # md5: S3 keeps none we can read as such (an ETag is not one)
        with self._at.translated("head", key):
            response = self._client.head_object(
                Bucket=self._at.bucket, Key=self._at.full(key), ChecksumMode="ENABLED"
            )
        value = str(response.get(field) or "")
        if not value or "-" in value or response.get("ChecksumType") == "COMPOSITE":
            return None
        return base64.b64decode(value)

    # -- writes ----------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        """One PutObject (S3 writes are atomic: readers see the old or the new bytes)."""
        with self._at.translated("put", key):
            self._client.put_object(Bucket=self._at.bucket, Key=self._at.full(key), Body=data)

    def create(self, key: str, data: bytes) -> None:
        """One conditional PutObject (``IfNoneMatch='*'``); ObjectExistsError if present."""
        full = self._at.full(key)
        try:
            self._client.put_object(Bucket=self._at.bucket, Key=full, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if error_code(exc) in EXISTS:
                raise ObjectExistsError(
                    f"object {key!r} already exists in {self.uri}: it was not overwritten"
                ) from exc
            raise self._at.error(exc, "create", key) from exc
        except BotoCoreError as exc:
            raise self._at.error(exc, "create", key) from exc

    def get_versioned(self, key: str, *, max_bytes: int | None = None) -> tuple[bytes, str] | None:
        """One GetObject: the bytes (at most ``max_bytes + 1`` of them when bounded: the
        rest is not read) and the ETag; None if absent."""
        try:
            with self._at.translated("get", key):
                response = self._client.get_object(Bucket=self._at.bucket, Key=self._at.full(key))
                body = response["Body"]
                try:
                    data = body.read() if max_bytes is None else body.read(max_bytes + 1)
                finally:
                    body.close()
                return data, str(response["ETag"])
        except NotFoundError:
            return None

    def replace(self, key: str, data: bytes, *, if_match: str) -> None:
        """One conditional PutObject (``IfMatch``): StaleVersionError if the object changed
        (412), is gone (404), or another conditional write to it is in flight (409)."""
        full = self._at.full(key)
        try:
            self._client.put_object(Bucket=self._at.bucket, Key=full, Body=data, IfMatch=if_match)
        except ClientError as exc:
            if error_code(exc) in EXISTS | NOT_FOUND:
                raise StaleVersionError(
                    f"object {key!r} in {self.uri} is no longer version {if_match}: read it again"
                ) from exc
            raise self._at.error(exc, "replace", key) from exc
        except BotoCoreError as exc:
            raise self._at.error(exc, "replace", key) from exc

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        """One quiet DeleteObjects per 1,000 keys; per-key errors go to ``failed``.

        A whole request that fails (after botocore's retries) raises: deletes are
        idempotent, so the caller retries all keys, including those already gone.
        """
        unique = list(dict.fromkeys(check_key(key) for key in keys))
        deleted: list[str] = []
        failed: list[tuple[str, str]] = []
        for batch in chunked(unique, MAX_KEYS_PER_REQUEST):
            with self._at.translated("delete", f"{len(batch)} keys"):
                response = self._client.delete_objects(
                    Bucket=self._at.bucket,
                    Delete={"Objects": [{"Key": self._at.full(k)} for k in batch], "Quiet": True},
                )
            errors: dict[str, str] = {}
            for error in response.get("Errors", []):
                if error.get("Code") in NOT_FOUND:
                    continue  # absent counts as deleted
                key = self._at.relative(error.get("Key", ""))
                if error.get("Code") in ACCESS_DENIED_CODES:
                    # (a 200 with per-key errors: the client's AccessDenied hook never sees it)
                    errors[key] = str(
                        AccessDeniedError(
                            "s3:DeleteObject",
                            f"arn:aws:s3:::{self._at.bucket}/{error.get('Key', '')}",
                        )
                    )
                    continue
                errors[key] = f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
            failed.extend(errors.items())
            deleted.extend(key for key in batch if key not in errors)
        return DeleteResult(deleted=tuple(deleted), failed=tuple(failed))

    # -- legal holds (ObjectHolds: the bucket must have Object Lock enabled) -----------

    def hold(self, key: str) -> None:
        """One PutObjectLegalHold (ON) on the object's current version (s3_legal_holds.py)."""
        self._holds.hold(key)

    def release_holds(self, prefix: str) -> int:
        """Every version's hold under ``prefix`` released (s3_legal_holds.py)."""
        return self._holds.release_holds(prefix)

    # -- helpers ---------------------------------------------------------------------

    def _list_request(
        self, prefix: str, start_after: str | None, limit: int, token: str | None
    ) -> ListObjectsV2OutputTypeDef:
        check_prefix(prefix)
        request: dict[str, Any] = {
            "Bucket": self._at.bucket,
            "Prefix": self._at.prefix + prefix,
            "MaxKeys": limit,
        }
        # StartAfter is only honoured on the first page; the token carries on from there.
        if token is not None:
            request["ContinuationToken"] = token
        elif start_after is not None:
            request["StartAfter"] = self._at.prefix + start_after
        with self._at.translated("list", prefix):
            return self._client.list_objects_v2(**request)

    def _info(self, item: ObjectTypeDef) -> ObjectInfo:
        return ObjectInfo(
            key=self._at.relative(item["Key"]),
            size=item["Size"],
            last_modified=_utc(item["LastModified"]),
            etag=item.get("ETag"),
        )


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
