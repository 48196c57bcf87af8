"""An opened snapshot or restore: what its descriptor says, and its files read back
checked against it (docs/jobs.md):

- sizes: one listing of the prefix, before anything is downloaded;
- checksums: recomputed from the bytes downloaded (``verify`` streams them, ``to_arrow``
  checks the very bytes it parses, ``download`` the very bytes it writes, each file
  renamed into place only once checked).

Anything that differs raises :class:`SnapshotCorruptError` naming the file and both values.
A file listed without a checksum is checked by size only. ``SnapshotReader`` (reader.py)
opens one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from snapledger.adapters.object_keys import TEMP_PREFIX
from snapledger.client._arrow import pa, pq
from snapledger.client.descriptors import RestoreDescriptorV1
from snapledger.client.errors import FileProblem, SnapshotCorruptError, SnapshotFormatError
from snapledger.client.state_table import STATE_ARROW_SCHEMA, STATE_COLUMNS
from snapledger.client.storage import BlobStore, format_checksum
from snapledger.core.checksums import Checksum, ChecksumError, Hasher, mismatch, parse_checksum
from snapledger.layout import path_problem
from snapledger.models.manifest import ManifestFile, ManifestReference, ManifestV1, SnapshotFormat

#: Files fetched at once by ``verify``, ``to_arrow`` and ``download``.
DEFAULT_READERS = 4

_T = TypeVar("_T")
_E = TypeVar("_E")


class OpenedSnapshot:
    """A snapshot or restore whose descriptor was read; its files not yet checked."""

    def __init__(
        self,
        store: BlobStore,
        prefix: str,
        descriptor: ManifestV1 | RestoreDescriptorV1,
        *,
        kind: Literal["snapshot", "restore"],
        offsets: dict[str, int] | None,
        workers: int = DEFAULT_READERS,
    ) -> None:
        self._store = store
        self._prefix = prefix
        self._descriptor = descriptor
        self._kind: Literal["snapshot", "restore"] = kind
        self._offsets = offsets
        self._workers = workers

    # -- what the descriptor says --------------------------------------------------------

    @property
    def kind(self) -> Literal["snapshot", "restore"]:
        return self._kind

    @property
    def prefix(self) -> str:
        """The folder of the files, relative to the store's root, with a trailing '/'."""
        return self._prefix

    @property
    def descriptor(self) -> ManifestV1 | RestoreDescriptorV1:
        """The parsed ``_manifest.json`` or ``_restore.json``."""
        return self._descriptor

    @property
    def stream(self) -> str:
        return self._descriptor.stream

    @property
    def partition(self) -> int:
        return self._descriptor.partition

    @property
    def lsn(self) -> int:
        """The state holds every record with lsn <= this."""
        return self._descriptor.lsn

    @property
    def snapshot_id(self) -> str | None:
        """The snapshot's ULID; None for a restore."""
        return self._descriptor.snapshot_id if isinstance(self._descriptor, ManifestV1) else None

    @property
    def offsets(self) -> dict[str, int] | None:
        """The processor's input positions the state matches, when known."""
        return dict(self._offsets) if self._offsets is not None else None

    @property
    def format(self) -> SnapshotFormat:
        if isinstance(self._descriptor, ManifestV1):
            return self._descriptor.format
        return "kv-parquet"  # a restore writes the state's Parquet files

    @property
    def files(self) -> tuple[ManifestFile, ...]:
        return tuple(self._descriptor.files)

    @property
    def references(self) -> tuple[ManifestReference, ...]:
        """The files it uses outside its folder (paths relative to the lineage's folder)."""
        descriptor = self._descriptor
        return tuple(descriptor.references or ()) if isinstance(descriptor, ManifestV1) else ()

    def _every_file(self) -> list[tuple[str, ManifestFile]]:
        """(key, entry) of each file to read: its own, then each reference, whose entry's
        path is where it lands in a download: its name (a RocksDB store's files are one
        flat folder). SnapshotCorruptError if two would land at one path."""
        located = [(self._prefix + f.path, f) for f in self.files]
        lineage = self._prefix.rstrip("/").rpartition("/")[0] + "/"
        for ref in self.references:
            name = ref.path.rpartition("/")[2]
            located.append(
                (lineage + ref.path, ManifestFile(path=name, size=ref.size, checksum=ref.checksum))
            )
        names = [entry.path for _, entry in located]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            self._raise([FileProblem(n, "path", "one file", "two files land here") for n in twice])
        return located

    @property
    def row_count(self) -> int | None:
        if isinstance(self._descriptor, ManifestV1):
            return self._descriptor.total_rows
        return self._descriptor.row_count

    # -- checked reads -------------------------------------------------------------------

    def verify(self) -> None:
        """Check every file's size (one listing) and checksum (each downloaded, streamed,
        and its checksum recomputed); SnapshotCorruptError naming every file at fault."""
        located = self._every_file()
        self._raise(self._listing_problems(located))
        problems = self._map(lambda pair: self._streamed_problem(*pair), located)
        self._raise([p for p in problems if p is not None])

    def to_arrow(self) -> pa.Table:
        """The state as one key-sorted table (key string, value binary, lsn int64).

        Sizes are checked first, then each file's bytes are checked and only then parsed.
        An ``opaque`` snapshot is refused (SnapshotFormatError): use ``download``.
        """
        if self.format != "kv-parquet":
            raise SnapshotFormatError(
                f"snapshot {self._prefix} is {self.format!r}: its files are not Parquet of "
                "key, value, lsn, so they cannot be read as a table; use download(dest_dir) "
                "and open them with the tool that wrote them"
            )
        self._raise(self._listing_problems(self._every_file()))
        tables = self._map(self._checked_table, list(self.files))
        if not tables:
            return STATE_ARROW_SCHEMA.empty_table()  # a job writes no file for empty state
        return pa.concat_tables(tables)

    def download(self, dest_dir: str | os.PathLike[str]) -> Path:
        """Copy every file under ``dest_dir`` (relative paths kept; a reference under its
        name), any format; returns it.

        Each file is written beside its final name and renamed into place only once its
        size and checksum are checked, so a file at its final path is always a checked
        one; on SnapshotCorruptError the files checked before stay, the bad one does not.
        """
        dest = Path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        located = self._every_file()
        self._raise(self._listing_problems(located))
        self._map(lambda pair: self._download_one(*pair, dest), located)
        return dest

    # -- steps ---------------------------------------------------------------------------

    def _listing_problems(self, located: Sequence[tuple[str, ManifestFile]]) -> list[FileProblem]:
        """Unsafe paths, then each file absent from one listing (of each folder read) or of
        another size."""
        paths = [f.path for f in self.files] + [r.path for r in self.references]
        unsafe = [
            FileProblem(path, "path", "a relative path", f"not a safe path ({problem})")
            for path in paths
            if (problem := path_problem(path)) is not None
        ]
        if unsafe:
            return unsafe
        lineage = self._prefix.rstrip("/").rpartition("/")[0] + "/"
        tops = {r.path.partition("/")[0] for r in self.references}
        folders = [self._prefix, *sorted(f"{lineage}{top}/" for top in tops)]
        sizes = {listed.key: listed.size for f in folders for listed in self._store.list(f)}
        problems = []
        for key, entry in located:
            size = sizes.get(key)
            if size is None:
                problems.append(FileProblem(entry.path, "missing", f"{entry.size} bytes", None))
            elif size != entry.size:
                problems.append(
                    FileProblem(entry.path, "size", f"{entry.size} bytes", f"{size} bytes")
                )
        return problems

    def _streamed_problem(self, key: str, entry: ManifestFile) -> FileProblem | None:
        stated = self._stated(entry)
        hasher = Hasher(stated.algorithm) if stated is not None else None
        size = 0
        for chunk in self._store.iter_chunks(key):
            size += len(chunk)
            if hasher is not None:
                hasher.update(chunk)
        return _compare(entry, size, stated, hasher.checksum() if hasher is not None else None)

    def _checked_table(self, entry: ManifestFile) -> pa.Table:
        data = self._store.get(self._prefix + entry.path)
        stated = self._stated(entry)
        actual = None
        if stated is not None:
            hasher = Hasher(stated.algorithm)
            hasher.update(data)
            actual = hasher.checksum()
        self._raise([p for p in [_compare(entry, len(data), stated, actual)] if p is not None])
        return self._as_state_table(entry, data)

    def _as_state_table(self, entry: ManifestFile, data: bytes) -> pa.Table:
        try:
            table = pq.read_table(pa.BufferReader(data))
            return table.select(list(STATE_COLUMNS)).cast(STATE_ARROW_SCHEMA)
        except (pa.ArrowException, ValueError, KeyError, OSError) as exc:
            reason = f"not a Parquet file of key (string), value (binary), lsn (int64): {exc}"
            raise SnapshotCorruptError(
                self._where(), [FileProblem(entry.path, "unreadable", "kv-parquet", reason)]
            ) from exc

    def _download_one(self, key: str, entry: ManifestFile, dest: Path) -> None:
        final = dest / entry.path
        final.parent.mkdir(parents=True, exist_ok=True)
        temp = final.parent / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
        stated = self._stated(entry)
        try:
            stored = self._store.download(
                key,
                temp,
                checksum_algorithm=stated.algorithm if stated is not None else None,
            )
            actual = parse_checksum(stored.checksum) if stored.checksum is not None else None
            self._raise([p for p in [_compare(entry, stored.size, stated, actual)] if p])
            os.replace(temp, final)
        finally:
            temp.unlink(missing_ok=True)

    def _stated(self, entry: ManifestFile) -> Checksum | None:
        if entry.checksum is None:
            return None
        try:
            return parse_checksum(entry.checksum)
        except ChecksumError as exc:
            raise SnapshotCorruptError(
                self._where(), [FileProblem(entry.path, "unreadable", "a checksum", str(exc))]
            ) from exc

    def _raise(self, problems: Sequence[FileProblem]) -> None:
        if problems:
            raise SnapshotCorruptError(self._where(), problems)

    def _where(self) -> str:
        return f"{self._store.uri.rstrip('/')}/{self._prefix}"

    def _map(self, work: Callable[[_E], _T], files: Sequence[_E]) -> list[_T]:
        """``work`` over ``files``, up to ``workers`` at once (S3 reads wait on the network)."""
        if self._workers == 1 or len(files) < 2:
            return [work(entry) for entry in files]
        with ThreadPoolExecutor(max_workers=min(self._workers, len(files))) as pool:
            return list(pool.map(work, files))


def _compare(
    entry: ManifestFile, size: int, stated: Checksum | None, actual: Checksum | None
) -> FileProblem | None:
    """What differs between the descriptor's entry and the bytes read, if anything."""
    if size != entry.size:
        return FileProblem(entry.path, "size", f"{entry.size} bytes", f"{size} bytes")
    if stated is None or actual is None or mismatch(entry.path, stated, actual) is None:
        return None
    return FileProblem(entry.path, "checksum", format_checksum(stated), format_checksum(actual))
