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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.access_denied import ACCESS_DENIED_CODES
from snapledger.adapters.object_store_file import check_key, check_prefix
from snapledger.errors import (
    AccessDeniedError,
    InvalidRequestError,
    ManifestTooLargeError,
    NotFoundError,
    ObjectExistsError,
    SnapledgerError,
    StaleVersionError,
    StoreUnavailableError,
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

_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
# 412 is the answer to IfNoneMatch='*' on an existing key; 409 means another conditional
# write to the same key is in flight, which one of the two creators loses either way.
_EXISTS = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
#: PutObjectLegalHold requests in flight at once when releasing a prefix's versions.
HOLD_RELEASERS = 16
#: S3's answer to a legal hold on a bucket created without Object Lock.
_NO_OBJECT_LOCK = "InvalidRequest"
_THROTTLED = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "ServiceUnavailable"}
)


class S3ObjectStore:
    """An ObjectStore over one S3 bucket and key prefix; keys are relative to the prefix."""

    def __init__(self, bucket: str, prefix: str = "", client: S3Client | None = None) -> None:
        self._bucket = bucket
        # Normalized to '' or 'a/b/', so a relative key is always prefix + key.
        stripped = prefix.strip("/")
        self._prefix = f"{check_key(stripped)}/" if stripped else ""
        self._client: S3Client = client if client is not None else boto3.client("s3")

    @property
    def uri(self) -> str:
        return f"s3://{self._bucket}/{self._prefix}".rstrip("/")

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
            "Bucket": self._bucket,
            "Prefix": self._prefix + prefix,
            "Delimiter": "/",
            "MaxKeys": MAX_KEYS_PER_REQUEST,
        }
        while True:
            with self._translated("list", prefix):
                response = self._client.list_objects_v2(**request)
            for common in response.get("CommonPrefixes", []):
                yield common["Prefix"].removeprefix(self._prefix)
            token = response.get("NextContinuationToken")
            if not response.get("IsTruncated") or token is None:
                return
            request["ContinuationToken"] = token

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """One GetObject; with ``max_bytes``, its ContentLength is checked before the body
        is read, so an oversized object is never downloaded."""
        with self._translated("get", key):
            response = self._client.get_object(Bucket=self._bucket, Key=self._full(key))
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
        with self._translated("get", key):
            response = self._client.get_object(
                Bucket=self._bucket, Key=self._full(key), Range=f"bytes=-{length}"
            )
            return response["Body"].read()

    def head(self, key: str) -> ObjectInfo | None:
        """One HeadObject: the object's info, or None if absent."""
        try:
            with self._translated("head", key):
                response = self._client.head_object(Bucket=self._bucket, Key=self._full(key))
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
        with self._translated("head", key):
            response = self._client.head_object(
                Bucket=self._bucket, Key=self._full(key), ChecksumMode="ENABLED"
            )
        value = str(response.get(field) or "")
        if not value or "-" in value or response.get("ChecksumType") == "COMPOSITE":
            return None
        return base64.b64decode(value)

    # -- writes ----------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        """One PutObject (S3 writes are atomic: readers see the old or the new bytes)."""
        with self._translated("put", key):
            self._client.put_object(Bucket=self._bucket, Key=self._full(key), Body=data)

    def create(self, key: str, data: bytes) -> None:
        """One conditional PutObject (``IfNoneMatch='*'``); ObjectExistsError if present."""
        full = self._full(key)
        try:
            self._client.put_object(Bucket=self._bucket, Key=full, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if _code(exc) in _EXISTS:
                raise ObjectExistsError(
                    f"object {key!r} already exists in {self.uri}: it was not overwritten"
                ) from exc
            raise self._error(exc, "create", key) from exc
        except BotoCoreError as exc:
            raise self._error(exc, "create", key) from exc

    def get_versioned(self, key: str, *, max_bytes: int | None = None) -> tuple[bytes, str] | None:
        """One GetObject: the bytes (at most ``max_bytes + 1`` of them when bounded: the
        rest is not read) and the ETag; None if absent."""
        try:
            with self._translated("get", key):
                response = self._client.get_object(Bucket=self._bucket, Key=self._full(key))
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
        full = self._full(key)
        try:
            self._client.put_object(Bucket=self._bucket, Key=full, Body=data, IfMatch=if_match)
        except ClientError as exc:
            if _code(exc) in _EXISTS | _NOT_FOUND:
                raise StaleVersionError(
                    f"object {key!r} in {self.uri} is no longer version {if_match}: read it again"
                ) from exc
            raise self._error(exc, "replace", key) from exc
        except BotoCoreError as exc:
            raise self._error(exc, "replace", key) from exc

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        """One quiet DeleteObjects per 1,000 keys; per-key errors go to ``failed``.

        A whole request that fails (after botocore's retries) raises: deletes are
        idempotent, so the caller retries all keys, including those already gone.
        """
        unique = list(dict.fromkeys(check_key(key) for key in keys))
        deleted: list[str] = []
        failed: list[tuple[str, str]] = []
        for batch in chunked(unique, MAX_KEYS_PER_REQUEST):
            with self._translated("delete", f"{len(batch)} keys"):
                response = self._client.delete_objects(
                    Bucket=self._bucket,
                    Delete={"Objects": [{"Key": self._full(k)} for k in batch], "Quiet": True},
                )
            errors: dict[str, str] = {}
            for error in response.get("Errors", []):
                if error.get("Code") in _NOT_FOUND:
                    continue  # absent counts as deleted
                key = error.get("Key", "").removeprefix(self._prefix)
                if error.get("Code") in ACCESS_DENIED_CODES:
                    # (a 200 with per-key errors: the client's AccessDenied hook never sees it)
                    errors[key] = str(
                        AccessDeniedError(
                            "s3:DeleteObject", f"arn:aws:s3:::{self._bucket}/{error.get('Key', '')}"
                        )
                    )
                    continue
                errors[key] = f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
            failed.extend(errors.items())
            deleted.extend(key for key in batch if key not in errors)
        return DeleteResult(deleted=tuple(deleted), failed=tuple(failed))

    # -- legal holds (ObjectHolds: the bucket must have Object Lock enabled) -----------

    def hold(self, key: str) -> None:
        """One PutObjectLegalHold (ON) on the object's current version."""
        self._legal_hold(key, None, "ON")

    def release_holds(self, prefix: str) -> int:
        """ListObjectVersions under ``prefix`` (one request per 1,000 versions), then one
        PutObjectLegalHold (OFF) per object version, current or not (delete markers carry
        no hold), ``HOLD_RELEASERS`` at a time: releasing an unheld version is harmless."""
        versions = list(self._versions(prefix))
        if len(versions) <= 1:
            for key, version_id in versions:
                self._legal_hold(key, version_id, "OFF")
        else:
            with ThreadPoolExecutor(max_workers=min(HOLD_RELEASERS, len(versions))) as pool:
                list(pool.map(lambda kv: self._legal_hold(kv[0], kv[1], "OFF"), versions))
        return len(versions)

    def _versions(self, prefix: str) -> Iterator[tuple[str, str]]:
        check_prefix(prefix)
        request: dict[str, Any] = {
            "Bucket": self._bucket,
            "Prefix": self._prefix + prefix,
            "MaxKeys": MAX_KEYS_PER_REQUEST,
        }
        while True:
            with self._translated("list versions", prefix):
                response = self._client.list_object_versions(**request)
            for version in response.get("Versions", []):
                yield version["Key"].removeprefix(self._prefix), version["VersionId"]
            if not response.get("IsTruncated"):
                return
            request["KeyMarker"] = response.get("NextKeyMarker")
            request["VersionIdMarker"] = response.get("NextVersionIdMarker")

    def _legal_hold(self, key: str, version_id: str | None, status: str) -> None:
        request: dict[str, Any] = {
            "Bucket": self._bucket,
            "Key": self._full(key),
            "LegalHold": {"Status": status},
        }
        if version_id is not None:
            request["VersionId"] = version_id
        action = "hold" if status == "ON" else "release the hold of"
        try:
            self._client.put_object_legal_hold(**request)
        except ClientError as exc:
            if _code(exc) == _NO_OBJECT_LOCK:
                raise InvalidRequestError(
                    f"{action} {key!r} in {self.uri}: the bucket has no Object Lock "
                    f"({exc.response.get('Error', {}).get('Message', '')}): protectLatest "
                    "needs a bucket created with Object Lock (docs/deploy.md, 'The latest "
                    "protected in the bucket'); or turn the setting off"
                ) from exc
            raise self._error(exc, action, key) from exc
        except BotoCoreError as exc:
            raise self._error(exc, action, key) from exc

    # -- helpers ---------------------------------------------------------------------

    def _full(self, key: str) -> str:
        return self._prefix + check_key(key)

    def _list_request(
        self, prefix: str, start_after: str | None, limit: int, token: str | None
    ) -> ListObjectsV2OutputTypeDef:
        check_prefix(prefix)
        request: dict[str, Any] = {
            "Bucket": self._bucket,
            "Prefix": self._prefix + prefix,
            "MaxKeys": limit,
        }
        # StartAfter is only honoured on the first page; the token carries on from there.
        if token is not None:
            request["ContinuationToken"] = token
        elif start_after is not None:
            request["StartAfter"] = self._prefix + start_after
        with self._translated("list", prefix):
            return self._client.list_objects_v2(**request)

    def _info(self, item: ObjectTypeDef) -> ObjectInfo:
        return ObjectInfo(
            key=item["Key"].removeprefix(self._prefix),
            size=item["Size"],
            last_modified=_utc(item["LastModified"]),
            etag=item.get("ETag"),
        )

    @contextmanager
    def _translated(self, action: str, key: str) -> Iterator[None]:
        """Turn botocore errors raised inside the block into snapledger errors."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, action, key) from exc

    def _error(self, exc: ClientError | BotoCoreError, action: str, key: str) -> SnapledgerError:
        where = f"{action} {key!r} in {self.uri}"
        if not isinstance(exc, ClientError):
            return StoreUnavailableError(
                f"{where} failed before S3 answered ({exc}): check the network, endpoint and "
                "credentials, then try again"
            )
        code, status = _code(exc), _status(exc)
        if code in _NOT_FOUND:
            return NotFoundError(f"{where}: no such object")
        if code == "NoSuchBucket":
            return StoreUnavailableError(
                f"{where}: bucket {self._bucket!r} does not exist: check the store URI"
            )
        if code in ("AccessDenied", "403"):
            return StoreUnavailableError(
                f"{where}: access denied: grant the caller s3:GetObject, s3:PutObject, "
                "s3:DeleteObject and s3:ListBucket on the bucket and prefix (without "
                "ListBucket S3 answers 403, not 404, for a missing key)"
            )
        if code in _THROTTLED or status >= 500:
            return StoreUnavailableError(
                f"{where}: S3 is throttling or failing ({code}, HTTP {status}) after retries: "
                "try again later, or raise the client's retry budget"
            )
        return InvalidRequestError(f"{where}: S3 rejected the request ({code}, HTTP {status})")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
