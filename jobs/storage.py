"""The object store as the job sees it: Hadoop's FileSystem API reached through py4j.

Going through Hadoop (rather than boto3 or ``open``) gives one code path for ``s3://``
roots on EMR Serverless (EMRFS) and ``file://`` roots locally, with the credentials and
configuration Spark already has. Keys are relative to the root, like the layout's. The
one exception is a final object (``publish``, ``write_bytes``): Hadoop cannot create one
only if absent on S3, so those go through jobs/create_only.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from jobs.create_only import (
    S3_SCHEMES,
    CreateOnlyUnavailableError,
    S3CreateOnly,
    link_new,
    write_new,
)
from jobs.layout import join
from snapledger.core.checksums import Hasher

_DIGEST_CHUNK = 8 * 1024 * 1024
# py4j returns a byte[] base64-encoded through an 8192-character buffered writer: an
# answer longer than one buffer leaves the JVM as two TCP writes, and the second waits
# for the first's delayed ACK (docs/jobs.md, "Measurements"). Reads that come back to
# Python are cut into answers that fit.
PY4J_READ_CHUNK = 6000


@dataclass(frozen=True, slots=True)
class StoredFile:
    """One object: its key relative to the root and its size in bytes."""

    key: str
    size: int

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]


class ObjectStore:
    """Files under one root URI, through the Hadoop FileSystem of that URI's scheme."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.root = root.rstrip("/")
        jvm: Any = spark._jvm  # py4j: the only way to reach Hadoop
        # Resolving a class by its dotted name costs py4j a round trip per name part.
        self._hadoop_path = jvm.org.apache.hadoop.fs.Path
        self._io_utils = jvm.org.apache.commons.io.IOUtils
        self._digest_utils = jvm.org.apache.commons.codec.digest.DigestUtils
        self._input_file = jvm.org.apache.parquet.hadoop.util.HadoopInputFile
        self._parquet_reader = jvm.org.apache.parquet.hadoop.ParquetFileReader
        self._crc32c = jvm.java.util.zip.CRC32C
        self._checked_stream = jvm.java.util.zip.CheckedInputStream
        conf = spark._jsc.hadoopConfiguration()
        fs = self._hadoop_path(self.root + "/").getFileSystem(conf)
        self._scheme = str(fs.getUri().getScheme())
        self._is_local = self._scheme == "file"
        # Final objects are created only if absent (publish, write_bytes): on S3 with the
        # SDK's conditional PutObject, made here so a job without it fails before writing.
        self._create_only: S3CreateOnly | None = None
        if self._scheme in S3_SCHEMES:
            self._create_only = S3CreateOnly(jvm, self.root)
        # Hadoop's local FS is a ChecksumFileSystem that leaves a ".name.crc" beside every
        # file it writes or renames; the raw FS underneath writes only the file itself.
        # (A session may already use the raw one: the local runner's does, so that Spark's
        # own writes skip the .crc too.)
        self._fs = _raw_local(fs) if self._is_local else fs
        # Hadoop may render "file:///x" as "file:/x": keys are cut at the root's path.
        self._root_path = fs.makeQualified(self._path("")).toUri().getPath().rstrip("/")

    def uri(self, key: str) -> str:
        return join(self.root, key)

    def _path(self, key: str) -> Any:
        return self._hadoop_path(self.uri(key))

    def _key_of(self, path: Any) -> str:
        full = str(path.toUri().getPath())
        root = self._root_path
        return full[len(root) + 1 :] if full.startswith(root + "/") else full

    def list_files(self, prefix: str, *, recursive: bool = False) -> list[StoredFile]:
        """Files under ``prefix`` (a folder key), sorted by key; [] when there is none."""
        folders = [self._path(prefix)]
        if not self._fs.exists(folders[0]):
            return []
        # listStatus, not listFiles: listFiles makes a LocatedFileStatus of each file, and
        # on the local FS that reads its permissions by starting a process per file.
        found: list[StoredFile] = []
        while folders:
            for status in self._fs.listStatus(folders.pop()):
                if not status.isDirectory():
                    found.append(StoredFile(self._key_of(status.getPath()), int(status.getLen())))
                elif recursive:
                    folders.append(status.getPath())
        return sorted(found, key=lambda f: f.key)

    def exists(self, key: str) -> bool:
        return bool(self._fs.exists(self._path(key)))

    def rename(self, source: str, target: str) -> None:
        target_path = self._path(target)
        if self._is_local:
            # The raw local FS cannot rename into a missing folder; object stores have no
            # folders, and creating one there would leave a marker object behind.
            self._fs.mkdirs(target_path.getParent())
        if not self._fs.rename(self._path(source), target_path):
            raise OSError(f"could not rename {self.uri(source)} to {self.uri(target)}")

    def delete(self, key: str, *, recursive: bool = False) -> None:
        self._fs.delete(self._path(key), recursive)

    def read_bytes(self, key: str) -> bytes:
        path = self._path(key)
        length = int(self._fs.getFileStatus(path).getLen())
        stream = self._fs.open(path)
        try:
            return self._read(stream, length)
        finally:
            stream.close()

    def sha256_hex(self, key: str) -> str:
        """The file's sha256, streamed through the JVM: no size limit, constant memory."""
        stream = self._fs.open(self._path(key))
        try:
            return str(self._digest_utils.sha256Hex(stream))
        finally:
            stream.close()

    def read_range(self, key: str, start: int, length: int) -> bytes:
        """``length`` bytes of the file from ``start``: one positioned read (a ranged GET)."""
        stream = self._fs.open(self._path(key))
        try:
            stream.seek(start)
            return self._read(stream, length)
        finally:
            stream.close()

    def _read(self, stream: Any, length: int) -> bytes:
        """The next ``length`` bytes of ``stream``, in answers py4j sends without a stall."""
        chunks = []
        for offset in range(0, length, PY4J_READ_CHUNK):
            size = min(PY4J_READ_CHUNK, length - offset)
            chunks.append(bytes(self._io_utils.toByteArray(stream, size)))
        return b"".join(chunks)

    def digest(self, key: str, algorithm: str, size: int) -> bytes:
        """The ``algorithm`` digest of the file (``size`` bytes), streamed: sha256, md5 and
        crc32c in the JVM (constant memory, no copy into Python); crc64nvme, which the JVM
        lacks, through Python in 8 MiB reads (``Hasher``: native code with the AWS CRT,
        else pure Python, a few MB a second)."""
        stream = self._fs.open(self._path(key))
        try:
            if algorithm in ("sha256", "md5"):
                return bytes(getattr(self._digest_utils, algorithm)(stream))
            if algorithm == "crc32c":
                crc = self._crc32c()
                self._io_utils.consume(self._checked_stream(stream, crc))
                return int(crc.getValue()).to_bytes(4, "big")
            hasher = Hasher(algorithm)
            for start in range(0, size, _DIGEST_CHUNK):
                length = min(_DIGEST_CHUNK, size - start)
                hasher.update(bytes(self._io_utils.toByteArray(stream, length)))
            return hasher.checksum().digest
        finally:
            stream.close()

    def parquet_rows(self, key: str) -> int:
        """A Parquet file's row count, from its footer."""
        hadoop_file = self._input_file.fromPath(self._path(key), self._fs.getConf())
        reader = self._parquet_reader.open(hadoop_file)
        try:
            return int(reader.getRecordCount())
        finally:
            reader.close()

    def publish(self, source: str, target: str) -> None:
        """Create ``target`` with the bytes of the staged file ``source``, only if
        ``target`` is absent (jobs/create_only.py): an existing ``target`` fails with
        ``ObjectExistsError`` and is left unchanged. ``source`` stays where it is (the
        job deletes its staging folder last)."""
        if self._is_local:
            link_new(self._local(source), self._local(target), self.uri(target))
        else:
            self._creator().copy_new(source, target)

    def write_bytes(self, key: str, data: bytes) -> None:
        """Create ``key`` with ``data``, only if ``key`` is absent (a descriptor is written
        once): locally an exclusive create (``O_EXCL``), on S3 a PutObject with
        ``If-None-Match: *`` (``ObjectExistsError`` when the key exists)."""
        if self._is_local:
            write_new(self._local(key), data, self.uri(key))
        else:
            self._creator().put_new(key, data)

    def _creator(self) -> S3CreateOnly:
        if self._create_only is None:
            raise CreateOnlyUnavailableError(
                f"cannot create objects under {self.root} only if absent: the job publishes "
                f"to s3:// or file:// roots, not {self._scheme}://"
            )
        return self._create_only

    def _local(self, key: str) -> str:
        return str(self._path(key).toUri().getPath())


def _raw_local(fs: Any) -> Any:
    """The raw FS under a local ChecksumFileSystem (Hadoop's LocalFileSystem, or a subclass
    such as Hive's ProxyLocalFileSystem); ``fs`` itself when it is raw already."""
    try:
        return fs.getRawFileSystem()
    except Py4JError:  # not a ChecksumFileSystem: no such method
        return fs
