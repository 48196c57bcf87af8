"""A base snapshot's files, checked before anything made from them is published.

Two rules, shared with registration (``snapledger.core``, shipped in the job's zip):

- the **schema**: every file's Parquet footer, read from its tail (one or two positioned
  reads, no data), must hold ``key``, ``value`` and ``lsn`` with the documented types; a
  file that does not would be read by Spark as nulls. Checked when the base is loaded,
  before Spark is asked for anything;
- the **checksums** the manifest states: every byte must be read, so they are taken on
  a few threads *while* the compaction runs and checked before the first file is
  published. A mismatch fails the job naming the file and both digests, and nothing is
  published.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from jobs.errors import SnapshotError
from jobs.storage import PY4J_READ_CHUNK, ObjectStore
from snapledger.core.checksums import Checksum, ChecksumError, mismatch, parse_checksum
from snapledger.core.parquet_footer import ParquetFooterError, kv_parquet_problems, read_footer

#: Files digested at once: each is a streaming read of the whole file.
DIGEST_THREADS = 4


@dataclass(frozen=True, slots=True)
class BaseFile:
    """One data file of a base snapshot, as its manifest states it."""

    key: str  # relative to the root
    size: int
    checksum: str | None  # '{algorithm}:{digest}', or None when the manifest gives none


def check_kv_schema(store: ObjectStore, file: BaseFile) -> None:
    """Raise SnapshotError unless ``file`` is a Parquet file of the kv-parquet columns."""
    try:
        # Through py4j every PY4J_READ_CHUNK bytes is a round trip: a first read of one
        # chunk holds a kv-parquet footer of a few row groups (about 600 bytes for one),
        # and a longer footer costs one more read, of its exact length.
        schema = read_footer(
            lambda length: store.read_range(file.key, file.size - length, length),
            file.size,
            first_read=PY4J_READ_CHUNK,
        )
    except ParquetFooterError as exc:
        raise SnapshotError(f"{file.key}: not a readable Parquet file ({exc})") from None
    problems = kv_parquet_problems(schema)
    if problems:
        raise SnapshotError(
            f"{file.key}: not a kv-parquet file ({'; '.join(problems)}); a snapshot the jobs "
            "read holds key (string), value (binary) and lsn (int64)"
        )


def stated_checksum(file: BaseFile) -> Checksum | None:
    """The manifest's checksum of ``file``; SnapshotError when it cannot be read."""
    if file.checksum is None:
        return None
    try:
        return parse_checksum(file.checksum)
    except ChecksumError as exc:
        raise SnapshotError(f"{file.key}: {exc}") from None


class ChecksumVerification:
    """The stated checksums of some files, taken in the background; ``problems`` waits."""

    def __init__(self, store: ObjectStore, files: Iterable[BaseFile]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=DIGEST_THREADS, thread_name_prefix="digest")
        self._pending: list[tuple[BaseFile, Checksum, Future[bytes]]] = []
        for file in files:
            stated = stated_checksum(file)
            if stated is not None:
                digest = self._pool.submit(store.digest, file.key, stated.algorithm, file.size)
                self._pending.append((file, stated, digest))
        self._pool.shutdown(wait=False)

    def problems(self) -> list[str]:
        """One sentence per file whose bytes are not what its manifest states."""
        found = []
        for file, stated, digest in self._pending:
            problem = mismatch(file.key, stated, Checksum(stated.algorithm, digest.result()))
            if problem:
                found.append(problem)
        return found

    def check(self) -> None:
        """Raise SnapshotError naming every mismatched file."""
        problems = self.problems()
        if problems:
            raise SnapshotError("a base snapshot's file changed: " + "; ".join(problems))

    def cancel(self) -> None:
        for _, _, digest in self._pending:
            digest.cancel()
