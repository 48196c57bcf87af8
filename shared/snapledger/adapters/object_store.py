"""Open the object store a URI names: ``s3://bucket[/prefix]`` in AWS, ``file:///dir`` locally."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.errors import InvalidRequestError
from snapledger.ports import ObjectHolds, ObjectStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

ACCEPTED_FORMS = "s3://bucket[/prefix], file:///absolute/dir or an absolute path /dir"
# S3's bucket naming rules (general purpose buckets), enough to catch typos early.
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def open_object_store(uri: str, *, s3_client: S3Client | None = None) -> ObjectStore:
    """The ObjectStore for ``uri``; ``s3_client`` is used for ``s3://`` URIs only."""
    if uri.startswith("/"):
        return FileObjectStore(Path(uri))
    parts = urlsplit(uri)
    if parts.scheme == "s3":
        if not _BUCKET_RE.match(parts.netloc):
            raise _invalid(uri, f"{parts.netloc!r} is not a valid S3 bucket name")
        if parts.query or parts.fragment:
            raise _invalid(uri, "S3 URIs take no query or fragment")
        return S3ObjectStore(parts.netloc, parts.path.strip("/"), client=s3_client)
    if parts.scheme == "file":
        # file://dir/x would silently mean host 'dir': only the local host is accepted.
        if parts.netloc not in ("", "localhost"):
            raise _invalid(uri, "a file URI needs three slashes and an absolute path")
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise _invalid(uri, "a file URI needs an absolute path")
        return FileObjectStore(Path(path))
    raise _invalid(uri, "unsupported scheme")


def object_holds(store: ObjectStore) -> ObjectHolds:
    """The store's legal holds (``SNAPLEDGER_PROTECT_LATEST``): only S3 has Object Lock."""
    if isinstance(store, S3ObjectStore):
        return store
    raise InvalidRequestError(
        f"SNAPLEDGER_PROTECT_LATEST needs an s3:// object store with Object Lock; {store.uri} "
        "has no legal holds: unset it (the local runtime cannot protect the latest)"
    )


def _invalid(uri: str, reason: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"object store URI {uri!r} is not valid ({reason}): use {ACCEPTED_FORMS}"
    )
