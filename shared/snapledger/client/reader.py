"""Read a snapshot or a restore back, checking every file against its descriptor first.

``SnapshotReader.open`` reads a snapshot's ``_manifest.json``, ``open_restore`` a restore's
``_restore.json`` (docs/jobs.md); both give an :class:`OpenedSnapshot` whose files are
checked before they are used:

- sizes: one listing of the prefix, before anything is downloaded;
- checksums: recomputed from the bytes downloaded (``verify`` streams them, ``to_arrow``
  checks the very bytes it parses, ``download`` the very bytes it writes, each file
  renamed into place only once checked).

Anything that differs raises :class:`SnapshotCorruptError` naming the file and both values.
A file listed without a checksum is checked by size only.

``open_latest`` and ``open_generation`` find the snapshot through a pointer object
(``latest.json``, ``generation.json``), which anyone allowed to write to the bucket could
have planted or copied from another lineage: a pointer is followed only when it names the
lineage (or stream) asked for, each snapshot at exactly its own key
(``snapshots/{stream}/{partition}/{lsn:020d}-{id}/``); otherwise, and for an object that is
no pointer at all (not JSON, over ``MAX_POINTER_BYTES``, nested too deep), the reader
refuses with :class:`PointerRefusedError`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import ValidationError

from snapledger.adapters.object_store_file import TEMP_PREFIX, check_key
from snapledger.client._arrow import pa, pq
from snapledger.client.descriptors import RESTORE_DESCRIPTOR_NAME, RestoreDescriptorV1
from snapledger.client.errors import (
    FileProblem,
    PointerRefusedError,
    SnapshotCorruptError,
    SnapshotFormatError,
)
from snapledger.client.state_table import STATE_ARROW_SCHEMA, STATE_COLUMNS
from snapledger.client.storage import BlobStore, format_checksum, open_store
from snapledger.core.checksums import Checksum, ChecksumError, Hasher, mismatch, parse_checksum
from snapledger.errors import NotFoundError
from snapledger.layout import (
    MANIFEST_NAME,
    SnapshotLocation,
    generation_pointer_key,
    latest_pointer_key,
    parse_manifest_key,
    parse_snapshot_prefix,
    path_problem,
    restore_prefix,
)
from snapledger.limits import MAX_POINTER_BYTES
from snapledger.models.manifest import MAX_MANIFEST_BYTES, ManifestFile, ManifestV1, SnapshotFormat
from snapledger.models.pointer import (
    GenerationPointer,
    LatestPointer,
    PointerT,
    PointerUnreadableError,
    parse_pointer,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Files fetched at once by ``verify``, ``to_arrow`` and ``download``.
DEFAULT_READERS = 4

_T = TypeVar("_T")


class SnapshotReader:
    """Opens snapshots and restores in the store at ``root`` (``s3://bucket[/prefix]``,
    ``file:///dir``, or a ``BlobStore`` already open)."""

    def __init__(
        self,
        root: str | BlobStore,
        *,
        s3_client: S3Client | None = None,
        max_workers: int = DEFAULT_READERS,
    ) -> None:
        self._store: BlobStore = (
            open_store(root, s3_client=s3_client) if isinstance(root, str) else root
        )
        self._workers = max(1, max_workers)

    @property
    def store(self) -> BlobStore:
        return self._store

    def open(self, prefix_or_manifest_key: str) -> OpenedSnapshot:
        """The snapshot at ``snapshots/{stream}/{partition}/{lsn:020d}-{id}/`` (with or
        without the trailing '/', or its ``_manifest.json`` key), from its manifest.

        NotFoundError if it has no manifest; SnapshotCorruptError if the manifest is not
        valid or disagrees with its prefix.
        """
        location = _location(prefix_or_manifest_key)
        where = self._where(location.prefix)
        raw = self._descriptor(location.manifest_key, where)
        try:
            manifest = ManifestV1.model_validate_json(raw)
        except ValidationError as exc:
            raise SnapshotCorruptError(
                where,
                detail=f"{MANIFEST_NAME} is not a valid manifest v1 ({exc.error_count()} "
                f"error(s), first: {_first_error(exc)})",
            ) from exc
        _check_agreement(location, manifest, where)
        return OpenedSnapshot(
            self._store,
            location.prefix,
            manifest,
            kind="snapshot",
            offsets=manifest.offsets,
            workers=self._workers,
        )

    def latest_pointer(self, stream: str, partition: int) -> LatestPointer:
        """The lineage's ``latest.json`` (one GET): the latest snapshot as snapledger last
        published it, readable while the registry's functions or table are not.
        NotFoundError if the lineage has none yet; PointerRefusedError if the object is not
        a pointer, or names another lineage's snapshot or one away from its own key."""
        key = latest_pointer_key(stream, partition)
        pointer = self._pointer(LatestPointer, key, f"lineage {stream}/{partition}")
        problem = pointer.lineage_problem(stream, partition)
        if problem is not None:
            raise PointerRefusedError(self._where(key), f"lineage {stream}/{partition}", problem)
        return pointer

    def generation_pointer(self, stream: str) -> GenerationPointer:
        """The stream's ``generation.json`` (one GET): its newest completed stream snapshot,
        each member's snapshot and offsets, readable without the registry. NotFoundError if
        no stream snapshot has completed yet; PointerRefusedError if the object is not a
        pointer, or names another stream or a member away from its own key."""
        key = generation_pointer_key(stream)
        pointer = self._pointer(GenerationPointer, key, f"stream {stream}")
        problem = pointer.stream_problem(stream)
        if problem is not None:
            raise PointerRefusedError(self._where(key), f"stream {stream}", problem)
        return pointer

    def _pointer(self, model: type[PointerT], key: str, asked: str) -> PointerT:
        """A pointer object (one GET, at most ``MAX_POINTER_BYTES`` + 1 bytes read), or
        PointerRefusedError naming it if it is not one."""
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in self._store.iter_chunks(key):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_POINTER_BYTES:
                    break
        except NotFoundError as exc:
            raise NotFoundError(
                f"{self._where(key)} does not exist: {asked} has no {model.object_name} yet "
                "(nothing published to it), or the name is wrong"
            ) from exc
        try:
            return parse_pointer(model, b"".join(chunks))
        except PointerUnreadableError as exc:
            raise PointerRefusedError(self._where(key), asked, exc.reason) from exc

    def open_generation(self, stream: str) -> dict[int, OpenedSnapshot]:
        """Every member snapshot of the stream's newest completed stream snapshot, by
        partition, found through ``generation.json`` from the bucket alone (refused,
        PointerRefusedError, unless it names only this stream's snapshots)."""
        pointer = self.generation_pointer(stream)
        opened = {}
        for member in pointer.members:
            snapshot = self.open(member.manifest_key)
            if snapshot.snapshot_id != member.snapshot_id or snapshot.lsn != member.lsn:
                raise SnapshotCorruptError(
                    self._where(member.prefix),
                    detail=f"generation.json names {member.snapshot_id} at LSN {member.lsn}, "
                    f"its manifest {snapshot.snapshot_id} at LSN {snapshot.lsn}",
                )
            opened[member.partition] = snapshot
        return opened

    def open_latest(self, stream: str, partition: int) -> OpenedSnapshot:
        """The lineage's latest snapshot found through its ``latest.json``, from the bucket
        alone: the pointer (refused, PointerRefusedError, unless it names this lineage's
        snapshot at its own key), then the manifest it names (which must agree with it)."""
        pointer = self.latest_pointer(stream, partition)
        opened = self.open(pointer.manifest_key)
        if opened.snapshot_id != pointer.snapshot_id or opened.lsn != pointer.lsn:
            raise SnapshotCorruptError(
                self._where(pointer.prefix),
                detail=f"latest.json names {pointer.snapshot_id} at LSN {pointer.lsn}, its "
                f"manifest {opened.snapshot_id} at LSN {opened.lsn}",
            )
        return opened

    def open_restore(self, job_id: str, partition: int) -> OpenedSnapshot:
        """The state a restore job wrote for ``partition``, from its ``_restore.json``.

        Its ``snapshot_id`` is None (a restore is not a snapshot); its ``offsets`` are its
        base snapshot's when no changelog was applied after the base (the state is then
        exactly the base's), else None: the input positions at a changelog LSN are the
        processor's to know.
        """
        if not job_id or "/" in job_id:
            raise ValueError(f"job_id {job_id!r} is not valid: pass the restore job's id")
        prefix = check_key(restore_prefix(job_id, partition).rstrip("/")) + "/"
        where = self._where(prefix)
        raw = self._descriptor(prefix + RESTORE_DESCRIPTOR_NAME, where)
        try:
            restore = RestoreDescriptorV1.model_validate_json(raw)
        except ValidationError as exc:
            raise SnapshotCorruptError(
                where, detail=f"{RESTORE_DESCRIPTOR_NAME} is not valid ({_first_error(exc)})"
            ) from exc
        if restore.job_id != job_id or restore.partition != partition:
            raise SnapshotCorruptError(
                where,
                detail=f"{RESTORE_DESCRIPTOR_NAME} names job {restore.job_id!r} partition "
                f"{restore.partition}, not job {job_id!r} partition {partition}",
            )
        base = restore.base
        same_as_base = base is not None and base.lsn == restore.lsn
        return OpenedSnapshot(
            self._store,
            prefix,
            restore,
            kind="restore",
            offsets=base.offsets if base is not None and same_as_base else None,
            workers=self._workers,
        )

    def _descriptor(self, key: str, where: str) -> bytes:
        try:
            raw = self._store.get(key)
        except NotFoundError as exc:
            raise NotFoundError(
                f"{where} has no {key.rsplit('/', 1)[-1]}: it does not exist, is not complete "
                "yet (the descriptor is written last) or was collected; check the prefix"
            ) from exc
        if len(raw) > MAX_MANIFEST_BYTES:
            raise SnapshotCorruptError(
                where, detail=f"its descriptor is {len(raw):,} bytes, over {MAX_MANIFEST_BYTES:,}"
            )
        return raw

    def _where(self, prefix: str) -> str:
        return f"{self._store.uri.rstrip('/')}/{prefix}"


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
    def row_count(self) -> int | None:
        if isinstance(self._descriptor, ManifestV1):
            return self._descriptor.total_rows
        return self._descriptor.row_count

    # -- checked reads -------------------------------------------------------------------

    def verify(self) -> None:
        """Check every file's size (one listing) and checksum (each downloaded, streamed,
        and its checksum recomputed); SnapshotCorruptError naming every file at fault."""
        self._raise(self._listing_problems())
        self._raise([p for p in self._map(self._streamed_problem, self.files) if p is not None])

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
        self._raise(self._listing_problems())
        tables = self._map(self._checked_table, self.files)
        if not tables:
            return STATE_ARROW_SCHEMA.empty_table()  # a job writes no file for empty state
        return pa.concat_tables(tables)

    def download(self, dest_dir: str | os.PathLike[str]) -> Path:
        """Copy every file under ``dest_dir`` (relative paths kept), any format; returns it.

        Each file is written beside its final name and renamed into place only once its
        size and checksum are checked, so a file at its final path is always a checked
        one; on SnapshotCorruptError the files checked before stay, the bad one does not.
        """
        dest = Path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        self._raise(self._listing_problems())
        self._map(lambda entry: self._download_one(entry, dest), self.files)
        return dest

    # -- steps ---------------------------------------------------------------------------

    def _listing_problems(self) -> list[FileProblem]:
        """Unsafe paths, then each file absent from one listing or of another size."""
        unsafe = [
            FileProblem(f.path, "path", "a relative path", f"not a safe path ({problem})")
            for f in self.files
            if (problem := path_problem(f.path)) is not None
        ]
        if unsafe:
            return unsafe
        sizes = {listed.key: listed.size for listed in self._store.list(self._prefix)}
        problems = []
        for entry in self.files:
            size = sizes.get(self._prefix + entry.path)
            if size is None:
                problems.append(FileProblem(entry.path, "missing", f"{entry.size} bytes", None))
            elif size != entry.size:
                problems.append(
                    FileProblem(entry.path, "size", f"{entry.size} bytes", f"{size} bytes")
                )
        return problems

    def _streamed_problem(self, entry: ManifestFile) -> FileProblem | None:
        stated = self._stated(entry)
        hasher = Hasher(stated.algorithm) if stated is not None else None
        size = 0
        for chunk in self._store.iter_chunks(self._prefix + entry.path):
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

    def _download_one(self, entry: ManifestFile, dest: Path) -> None:
        final = dest / entry.path
        final.parent.mkdir(parents=True, exist_ok=True)
        temp = final.parent / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
        stated = self._stated(entry)
        try:
            stored = self._store.download(
                self._prefix + entry.path,
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

    def _map(self, work: Callable[[ManifestFile], _T], files: Sequence[ManifestFile]) -> list[_T]:
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


def _location(prefix_or_manifest_key: str) -> SnapshotLocation:
    text = prefix_or_manifest_key
    if text.endswith("/" + MANIFEST_NAME):
        return parse_manifest_key(text)
    return parse_snapshot_prefix(text if text.endswith("/") else text + "/")


def _check_agreement(location: SnapshotLocation, manifest: ManifestV1, where: str) -> None:
    stated = SnapshotLocation(
        manifest.stream, manifest.partition, manifest.lsn, manifest.snapshot_id
    )
    if stated != location:
        raise SnapshotCorruptError(
            where,
            detail=f"its manifest names another snapshot ({stated.prefix}): a manifest must "
            "sit under its own stream, partition, lsn and snapshot id",
        )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
