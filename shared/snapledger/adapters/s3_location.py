"""Where an S3 object store lives (a bucket and a key prefix) and how S3's answers about it
become snapledger errors: shared by the store's reads and writes (object_store_s3.py) and
its legal holds (s3_legal_holds.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.object_keys import check_key
from snapledger.errors import (
    InvalidRequestError,
    NotFoundError,
    SnapledgerError,
    StoreUnavailableError,
)

NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
# 412 is the answer to IfNoneMatch='*' on an existing key; 409 means another conditional
# write to the same key is in flight, which one of the two creators loses either way.
EXISTS = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
_THROTTLED = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "ServiceUnavailable"}
)


class S3Location:
    """``bucket`` and ``prefix`` (normalized to '' or 'a/b/', so a relative key is always
    prefix + key)."""

    def __init__(self, bucket: str, prefix: str = "") -> None:
        self.bucket = bucket
        stripped = prefix.strip("/")
        self.prefix = f"{check_key(stripped)}/" if stripped else ""

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def full(self, key: str) -> str:
        """The bucket key of the relative ``key`` (checked)."""
        return self.prefix + check_key(key)

    def relative(self, full_key: str) -> str:
        return full_key.removeprefix(self.prefix)

    @contextmanager
    def translated(self, action: str, key: str) -> Iterator[None]:
        """Turn botocore errors raised inside the block into snapledger errors."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            raise self.error(exc, action, key) from exc

    def error(self, exc: ClientError | BotoCoreError, action: str, key: str) -> SnapledgerError:
        where = f"{action} {key!r} in {self.uri}"
        if not isinstance(exc, ClientError):
            return StoreUnavailableError(
                f"{where} failed before S3 answered ({exc}): check the network, endpoint and "
                "credentials, then try again"
            )
        code, status = error_code(exc), _status(exc)
        if code in NOT_FOUND:
            return NotFoundError(f"{where}: no such object")
        if code == "NoSuchBucket":
            return StoreUnavailableError(
                f"{where}: bucket {self.bucket!r} does not exist: check the store URI"
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


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
