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
links it into place (a download renames it), so a reader never sees half a file.

**Created only if absent.** ``put_file`` never overwrites: on S3 the PutObject, or the
CompleteMultipartUpload of a multipart upload (where S3 checks it: the object appears on
completion), carries ``If-None-Match: *``, which S3 refuses with 412 when the key exists;
the ``file://`` store's hard link fails when the key exists. Either way the caller gets
ObjectExistsError and the object there stays as it was (a refused multipart upload is
aborted). No permission beyond ``s3:PutObject`` is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import boto3

from snapledger.adapters.object_store import open_object_store
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.client.blob_store import (
    CHUNK_BYTES,
    MIB,
    BlobStore,
    FileSource,
    ListedObject,
    StoredObject,
    file_checksum,
    format_checksum,
)
from snapledger.client.blob_store_file import FileBlobStore
from snapledger.client.blob_store_s3 import (
    DEFAULT_MULTIPART_THRESHOLD,
    DEFAULT_PART_SIZE,
    MAX_PARTS,
    MIN_PART_SIZE,
    S3BlobStore,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_MULTIPART_THRESHOLD",
    "DEFAULT_PART_SIZE",
    "MAX_PARTS",
    "MIB",
    "MIN_PART_SIZE",
    "BlobStore",
    "FileBlobStore",
    "FileSource",
    "ListedObject",
    "S3BlobStore",
    "StoredObject",
    "file_checksum",
    "format_checksum",
    "open_store",
]


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
