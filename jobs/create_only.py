"""Creating a final object only if its key is absent: a job never replaces a snapshot's file.

A Hadoop rename is a copy on an object store, and EMRFS's copy (like its PutObject) sends no
``If-None-Match``: it would replace an object already at the key. So on ``s3://`` roots a
job publishes every final object (data files, ``_manifest.json``, ``_restore.json``) with
a PutObject carrying ``If-None-Match: *`` through the AWS SDK for Java v2 in the driver's
JVM (reached through py4j: the job imports only pyspark and the standard library), and S3
answers 412 when the key exists. On ``file://`` roots the final file is a hard link to the
staged one (``link(2)`` fails when the name exists) and a descriptor is created with
``O_EXCL``. Either way an existing key fails the
job with ``ObjectExistsError`` and the existing object is left as it was.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError, Py4JJavaError

from jobs.errors import JobError
from snapledger.limits import MAX_PUBLISHED_OBJECT_BYTES

S3_SCHEMES = ("s3", "s3a")
SDK_CLIENT = "software.amazon.awssdk.services.s3.S3Client"
_PRECONDITION_FAILED = 412


class ObjectExistsError(JobError):
    """A final object's key is taken: the job stops, the object there is left unchanged."""

    def __init__(self, uri: str) -> None:
        super().__init__(
            f"{uri} exists: a snapshot's files are never replaced, so this job stops here and "
            "leaves it as it is; its output prefix is new for every job, so another job or a "
            "person wrote there: find out which, then run the job again"
        )


class CreateOnlyUnavailableError(JobError):
    """The driver's JVM cannot make a conditional create: the job refuses to write at all."""


def size_problem(uri: str, size: int) -> str | None:
    """Why an object of ``size`` bytes cannot be published on S3 (one conditional
    PutObject), or None when it can."""
    if size <= MAX_PUBLISHED_OBJECT_BYTES:
        return None
    return (
        f"{uri} is {size:,} bytes, over the {MAX_PUBLISHED_OBJECT_BYTES:,}-byte limit of one "
        "conditional PutObject: lower the job's max_rows_per_file so each file is smaller"
    )


def link_new(source: str, target: str, target_uri: str) -> None:
    """Make the local file ``target`` the file at ``source`` (a hard link): fails, and
    changes nothing, when ``target`` exists."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        os.link(source, target)
    except FileExistsError:
        raise ObjectExistsError(target_uri) from None


def write_new(path: str, data: bytes, uri: str) -> None:
    """Create the local file ``path`` with ``data`` (``O_EXCL``): fails, and changes
    nothing, when it exists."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise ObjectExistsError(uri) from None
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


class S3CreateOnly:
    """Conditional creates (``If-None-Match: *``) of keys under one ``s3://`` root, with the
    SDK's default credentials, region and endpoint (``AWS_ENDPOINT_URL_S3`` included)."""

    def __init__(self, jvm: Any, root: str) -> None:
        parts = urlsplit(root)
        self._bucket, self._base = parts.netloc, parts.path.strip("/")
        self._root = root.rstrip("/")
        try:
            model = jvm.software.amazon.awssdk.services.s3.model
            self._put = model.PutObjectRequest
            self._get = model.GetObjectRequest
            self._body = jvm.software.amazon.awssdk.core.sync.RequestBody
            client = jvm.software.amazon.awssdk.services.s3.S3Client
            # py4j answers a class it cannot load with a JavaPackage of that name.
            if not isinstance(client, JavaClass):
                raise Py4JError(f"class {SDK_CLIENT} not found")
            self._put.builder().ifNoneMatch("*")  # the SDK's conditional create (2.27+)
            self._client = client.builder().crossRegionAccessEnabled(True).build()
        except Py4JError as missing:
            raise CreateOnlyUnavailableError(
                f"cannot create objects under {self._root} only if absent: the driver's "
                f"classpath has no AWS SDK for Java v2 S3 client with If-None-Match "
                f"({SDK_CLIENT} 2.27 or later; EMR 7 images ship it for EMRFS), or it "
                f"cannot start ({_first_line(missing)}). Without it the job would replace "
                "existing objects, so it writes nothing: run it on such an image, or add "
                "software.amazon.awssdk:s3 to spark.driver.extraClassPath"
            ) from None

    def uri(self, key: str) -> str:
        return f"{self._root}/{key}"

    def _object_key(self, key: str) -> str:
        return f"{self._base}/{key}" if self._base else key

    def put_new(self, key: str, data: bytes) -> None:
        """Create ``key`` with ``data``, only if absent."""
        self._put_new(key, len(data), self._body.fromBytes(bytearray(data)))

    def copy_new(self, source: str, target: str) -> None:
        """Create ``target`` with the bytes of ``source`` (streamed: GetObject into
        PutObject in the JVM, constant memory), only if absent."""
        request = self._get.builder().bucket(self._bucket).key(self._object_key(source)).build()
        stream = self._client.getObject(request)
        try:
            size = int(stream.response().contentLength())
            self._put_new(target, size, self._body.fromInputStream(stream, size))
        finally:
            stream.close()

    def _put_new(self, key: str, size: int, body: Any) -> None:
        problem = size_problem(self.uri(key), size)
        if problem is not None:
            raise JobError(problem)
        request = (
            self._put.builder()
            .bucket(self._bucket)
            .key(self._object_key(key))
            .contentLength(size)
            .ifNoneMatch("*")
            .build()
        )
        try:
            self._client.putObject(request, body)
        except Py4JJavaError as error:
            if _status(error) == _PRECONDITION_FAILED:
                raise ObjectExistsError(self.uri(key)) from None
            raise


def _status(error: Py4JJavaError) -> int | None:
    """The HTTP status of an SDK service error (an S3Exception), else None."""
    try:
        return int(error.java_exception.statusCode())
    except Py4JError:  # not an AwsServiceException: no status code
        return None


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
