"""Write a snapshot as the registry expects it: data files first, ``_manifest.json`` last.

A :class:`SnapshotWriter` is bound to one lineage (a stream's partition) and one store.
Each ``write`` puts a new snapshot under
``snapshots/{stream}/{partition}/{lsn:020d}-{snapshot_id}/`` (a fresh ULID, so two writes
never share a prefix): every data file with its checksum (see ``storage``), then the
manifest, each created only if absent. The manifest's arrival is the commit the ``register``
function reacts to, so a crash before it leaves files without a manifest, which the GC's
orphan sweep removes; it never leaves a manifest that names a missing file.

Everything that can be checked before an upload is (the arguments, the manifest's fields,
every row of the state), so a bad call uploads nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from snapledger.client._arrow import pa, pq
from snapledger.client.opaque_sources import opaque_sources
from snapledger.client.state_table import StateData, to_state_table
from snapledger.client.storage import (
    DEFAULT_MULTIPART_THRESHOLD,
    BlobStore,
    open_store,
)
from snapledger.errors import ManifestTooLargeError, ObjectExistsError
from snapledger.ids import new_ulid
from snapledger.layout import (
    MANIFEST_NAME,
    MAX_LSN,
    check_stream_name,
    snapshot_prefix,
)
from snapledger.models.manifest import (
    CHECKSUM_ALGORITHMS,
    MAX_MANIFEST_BYTES,
    ManifestFile,
    ManifestProducer,
    ManifestReference,
    ManifestV1,
    SnapshotFormat,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Rows per Parquet file (the last file of a snapshot holds the rest).
DEFAULT_TARGET_FILE_ROWS = 1_000_000
#: Rows per Parquet row group (a reader can skip row groups by their key statistics).
DEFAULT_ROW_GROUP_ROWS = 128 * 1024
MAX_PARTITION = 999_999_999


def part_name(index: int) -> str:
    """The data file names the jobs use too: ``part-00000.parquet``, ``part-00001.parquet``."""
    return f"part-{index:05d}.parquet"


@dataclass(frozen=True, slots=True)
class WrittenSnapshot:
    """A snapshot as written: where it is and what its manifest lists."""

    snapshot_id: str
    prefix: str  # relative to the store's root, with a trailing '/'
    manifest_key: str
    lsn: int
    epoch: int
    format: SnapshotFormat
    files: tuple[ManifestFile, ...]
    row_count: int | None  # None for an opaque snapshot
    #: The files it references outside its folder instead of uploading them (``reuse``).
    references: tuple[ManifestReference, ...] = ()


@dataclass(frozen=True, slots=True)
class _Draft:
    """A snapshot being written: its prefix and its manifest's fields but the files."""

    prefix: str
    fields: dict[str, Any]


class SnapshotWriter:
    """Writes snapshots of one lineage (``stream``, ``partition``) to the store at ``root``.

    ``root``: ``s3://bucket[/prefix]``, ``file:///dir``, or a ``BlobStore`` already open.
    ``checksum``: the algorithm of each file's checksum (``crc32c``, ``crc64nvme``,
    ``sha256`` or ``md5``; crc32c or crc64nvme let registration compare every file's, see
    ``storage``). ``target_file_rows``/``row_group_rows`` size the Parquet files;
    ``multipart_threshold`` (bytes) and ``s3_client`` apply to an S3 root given as a URI.
    """

    def __init__(
        self,
        root: str | BlobStore,
        stream: str,
        partition: int,
        *,
        producer: str = "my-app",
        producer_version: str | None = None,
        checksum: str = "crc32c",
        target_file_rows: int = DEFAULT_TARGET_FILE_ROWS,
        row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        s3_client: S3Client | None = None,
    ) -> None:
        self._stream = check_stream_name(stream)
        self._partition = _checked_int("partition", partition, MAX_PARTITION)
        if checksum not in CHECKSUM_ALGORITHMS:
            raise ValueError(
                f"checksum={checksum!r} is not an algorithm a manifest may name: use one of "
                f"{', '.join(CHECKSUM_ALGORITHMS)}"
            )
        self._checksum = checksum
        self._target_file_rows = _checked_positive("target_file_rows", target_file_rows)
        self._row_group_rows = _checked_positive("row_group_rows", row_group_rows)
        try:
            self._producer = ManifestProducer(name=producer, version=producer_version)
        except ValidationError as exc:
            raise ValueError(f"producer is not valid: {_describe(exc)}") from exc
        self._store: BlobStore = (
            open_store(root, s3_client=s3_client, multipart_threshold=multipart_threshold)
            if isinstance(root, str)
            else root
        )

    @property
    def store(self) -> BlobStore:
        return self._store

    def write(
        self,
        lsn: int,
        epoch: int,
        data: StateData,
        *,
        offsets: Mapping[str, int] | None = None,
        created_at: datetime | None = None,
        generation: int | None = None,
    ) -> WrittenSnapshot:
        """Write the state at ``lsn`` as a ``kv-parquet`` snapshot.

        ``data``: a ``pyarrow.Table`` (or RecordBatch, or an iterable of them) with
        columns ``key``, ``value`` and optionally ``lsn`` (each row's own; without it every
        row gets ``lsn``), or an iterable of ``(key, value)`` pairs, or a mapping of key to
        value. Keys must be unique and not null; a row's lsn may not exceed ``lsn``. The
        rows are sorted by key and written as ``part-NNNNN.parquet`` files of
        ``target_file_rows`` rows each (one empty file for an empty state). ``offsets``:
        the processor's input positions the state matches (e.g. ``{"orders-3": 18213}``).
        ``generation``: the stream snapshot this answers (a ``StreamSnapshotRequested``
        event's ``generation``); it counts when ``lsn`` is at least the partition's minimum.
        """
        draft = self._start(
            lsn, epoch, "kv-parquet", offsets=offsets, created_at=created_at, generation=generation
        )
        table = to_state_table(data, lsn)
        files = self._upload_parts(draft.prefix, table)
        return self._commit(draft, files, row_count=table.num_rows)

    def write_files(
        self,
        lsn: int,
        epoch: int,
        paths_or_dir: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        offsets: Mapping[str, int] | None = None,
        created_at: datetime | None = None,
        generation: int | None = None,
        changelog: Mapping[str, int | str] | None = None,
        reuse: Mapping[str, ManifestReference] | None = None,
    ) -> WrittenSnapshot:
        """Write local files as an ``opaque`` snapshot (e.g. a RocksDB checkpoint).

        A directory: every regular file under it, with its path relative to the directory
        (symlinked directories are not followed). A file, or a list of files: each under
        its own name. The registry retains and collects an opaque snapshot like any other,
        but the jobs refuse it as a base and ``OpenedSnapshot.to_arrow`` refuses to read it.
        ``changelog``: the manifest's ``changelog`` (``log_start_offset``, ``end_offset``,
        ``delete_retention_ms`` and ``topic_id`` of the changelog the files were read from, as
        read before
        consuming, ``created_at`` being when): how long retention counts the snapshot as
        restorable (a Kafka Streams store's: docs/kafka-streams.md).
        ``reuse``: files the lineage already holds, by the path a local file has here (a
        RocksDB SST's name): a local file of that path and size is referenced, not uploaded
        (its reference as given: a path relative to the lineage's folder, its size and
        checksum), for files that never change once written, as RocksDB's SSTs.
        """
        sources = opaque_sources(paths_or_dir)
        reused = reuse or {}
        draft = self._start(
            lsn,
            epoch,
            "opaque",
            offsets=offsets,
            created_at=created_at,
            generation=generation,
            changelog=changelog,
        )

        def held(relative: str, path: Path) -> ManifestReference | None:
            found = reused.get(relative)
            return found if found is not None and found.size == path.stat().st_size else None

        references = [ref for relative, path in sources if (ref := held(relative, path))]
        files = [
            self._upload(draft.prefix, relative, path, rows=None)
            for relative, path in sources
            if held(relative, path) is None
        ]
        return self._commit(draft, files, row_count=None, references=references)

    # -- steps ---------------------------------------------------------------------------

    def _start(
        self,
        lsn: int,
        epoch: int,
        snapshot_format: SnapshotFormat,
        *,
        offsets: Mapping[str, int] | None,
        created_at: datetime | None,
        generation: int | None,
        changelog: Mapping[str, int | str] | None = None,
    ) -> _Draft:
        """A new snapshot id and the manifest's fields, validated before any upload."""
        _checked_int("lsn", lsn, MAX_LSN)
        _checked_int("epoch", epoch, None)
        if created_at is not None and created_at.utcoffset() is None:
            raise ValueError(
                "created_at has no time zone: pass an aware datetime, e.g. datetime.now(UTC)"
            )
        snapshot_id = new_ulid()
        fields: dict[str, Any] = {
            "format_version": 1,
            "stream": self._stream,
            "partition": self._partition,
            "lsn": lsn,
            "snapshot_id": snapshot_id,
            "epoch": epoch,
            "created_at": created_at or datetime.now(UTC),
            "producer": self._producer,
            "source": {"kind": "processor"},
            "format": snapshot_format,
            "offsets": dict(offsets) if offsets is not None else None,
            "generation": generation,
        }
        if changelog is not None:
            fields["changelog"] = dict(changelog)
        _validated({**fields, "files": []})
        prefix = snapshot_prefix(self._stream, self._partition, lsn, snapshot_id)
        return _Draft(prefix=prefix, fields=fields)

    def _upload_parts(self, prefix: str, table: pa.Table) -> list[ManifestFile]:
        """Each slice of ``target_file_rows`` rows as a Parquet file, written to a scratch
        folder, uploaded with its checksum and deleted locally before the next."""
        files = []
        with tempfile.TemporaryDirectory(prefix="snapledger-") as scratch:
            for index, part in enumerate(_slices(table, self._target_file_rows)):
                local = Path(scratch) / part_name(index)
                pq.write_table(
                    part,
                    local,
                    row_group_size=self._row_group_rows,
                    # Keys and values of a state are nearly all distinct: dictionaries only cost.
                    use_dictionary=False,
                    compression="snappy",
                )
                files.append(self._upload(prefix, local.name, local, rows=part.num_rows))
                local.unlink()
        return files

    def _upload(self, prefix: str, relative: str, local: Path, *, rows: int | None) -> ManifestFile:
        key = prefix + relative  # created only if absent: never another writer's file
        try:
            stored = self._store.put_file(key, local, checksum_algorithm=self._checksum)
        except ObjectExistsError as exc:
            raise _not_overwritten(key, self._store.uri) from exc
        return ManifestFile(path=relative, size=stored.size, rows=rows, checksum=stored.checksum)

    def _commit(
        self,
        draft: _Draft,
        files: list[ManifestFile],
        *,
        row_count: int | None,
        references: list[ManifestReference] | None = None,
    ) -> WrittenSnapshot:
        """Validate the whole manifest and create ``_manifest.json``, never overwriting one."""
        manifest = _validated(
            {
                **draft.fields,
                "files": files,
                "row_count": row_count,
                "references": references or None,
            }
        )
        body = manifest.model_dump_json(exclude_none=True).encode()
        if len(body) > MAX_MANIFEST_BYTES:
            raise ManifestTooLargeError(
                f"the manifest of {draft.prefix} would be {len(body):,} bytes, over the "
                f"{MAX_MANIFEST_BYTES:,}-byte limit ({len(files):,} files): write fewer, larger "
                "files (raise target_file_rows, or pack an opaque snapshot's files)"
            )
        key = draft.prefix + MANIFEST_NAME
        try:
            self._store.put_if_absent(key, body)
        except ObjectExistsError as exc:
            raise _not_overwritten(key, self._store.uri) from exc
        return WrittenSnapshot(
            snapshot_id=manifest.snapshot_id,
            prefix=draft.prefix,
            manifest_key=key,
            lsn=manifest.lsn,
            epoch=manifest.epoch,
            format=manifest.format,
            files=tuple(manifest.files),
            row_count=manifest.row_count,
            references=tuple(manifest.references or ()),
        )


def _slices(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    """``table`` in slices of ``rows`` rows; one empty slice for an empty table."""
    if table.num_rows == 0:
        yield table
        return
    for offset in range(0, table.num_rows, rows):
        yield table.slice(offset, rows)


def _not_overwritten(key: str, root: str) -> ObjectExistsError:
    why = "another writer wrote it (ids are never reused); write the snapshot again (a new id)"
    return ObjectExistsError(f"{key} already exists in {root}, not overwritten: {why}")


def _validated(document: dict[str, Any]) -> ManifestV1:
    try:
        return ManifestV1.model_validate(document)
    except ValidationError as exc:
        raise ValueError(f"the snapshot's manifest would not be valid: {_describe(exc)}") from exc


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    )


def _checked_int(name: str, value: int, maximum: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is a {type(value).__name__}: pass an int")
    if value < 0 or (maximum is not None and value > maximum):
        bound = f"0 to {maximum:,}" if maximum is not None else "0 or more"
        raise ValueError(f"{name}={value} is out of range: use {bound}")
    return value


def _checked_positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r}: pass an int of 1 or more")
    return value
