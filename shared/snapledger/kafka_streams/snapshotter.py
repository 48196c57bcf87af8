"""Snapshots of a Kafka Streams store's partitions, made from its changelog topic alone while
the application runs (docs/kafka-streams.md, "Snapshots").

A store partition's snapshot is the store folder of its task, ``rocksdb/{store}/`` (the
RocksDB files, the changelog offset inside them), uploaded as an ``opaque`` snapshot of the
lineage (stream = the changelog topic, partition = the changelog partition) at LSN = the
offset of the last changelog record the store reflects; its manifest's ``changelog`` names
the topic's id (its incarnation). For each partition: the lineage's latest registered
snapshot is downloaded (checksums checked) into a scratch task folder (none, or one the
changelog cannot continue: an empty one; one of another incarnation of the topic, i.e. the
topic was deleted and recreated, makes the snapshot begin the lineage over at the epoch
above the lineage's highest: ``core/changelog_horizon.py``), ``kafka-seeder catch-up
--tasks`` (one process for every partition of the run: one JVM start, not one per
partition) applies the changelog after it up to the end offset
read at start, and when it applied records the store folder is written with
``SnapshotWriter.write_files`` (manifest last), to be registered as any snapshot is.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapledger.client.control import RequestRefusedError, Snapledger
from snapledger.client.errors import SnapshotCorruptError
from snapledger.client.opened_snapshot import OpenedSnapshot
from snapledger.client.reader import SnapshotReader
from snapledger.client.storage import BlobStore
from snapledger.client.writer import SnapshotWriter, WrittenSnapshot
from snapledger.core.changelog_horizon import other_incarnation
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.kafka_streams.catch_up import CatchUpResult, catch_up_tasks
from snapledger.kafka_streams.changelog import (
    DEFAULT_BROKER_TIMEOUT_S,
    Changelog,
    check_partition,
    describe_changelog,
    store_stream,
)
from snapledger.kafka_streams.generation import OpenGeneration, open_generation
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.limits import MAX_INPUT_PARTITIONS
from snapledger.models.manifest import ManifestReference

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: The producer name the snapshots' manifests carry.
PRODUCER = "snapledger-kafka-streams"
#: RocksDB's table files: immutable once written, so shared between snapshots.
SST_SUFFIX = ".sst"
#: The epoch of a lineage's first snapshot; later ones keep the lineage's highest epoch, and
#: the first snapshot of a new incarnation of the topic takes one above it.
EPOCH = 1


@dataclass(frozen=True)
class PartitionSnapshot:
    """What one partition's snapshot run did: its base (the snapshot it continued, or None
    for the changelog's start), the catch-up, and the snapshot written (None: nothing new)."""

    partition: int
    base_snapshot_id: str | None
    base_lsn: int | None
    catch_up: CatchUpResult
    written: WrittenSnapshot | None
    note: str


@dataclass(frozen=True)
class StoreSnapshotter:
    """Snapshots of store ``store`` of application ``application_id``.

    ``registry`` answers which snapshot is the latest; ``root`` is the snapshot store
    (``s3://bucket[/prefix]``, ``file:///dir`` or a BlobStore); ``on_written`` is called with
    each snapshot written (the local runtime delivers its arrival; in AWS the S3 event does).
    """

    registry: Snapledger
    root: str | BlobStore
    bootstrap_servers: str
    application_id: str
    store: str
    on_written: Callable[[WrittenSnapshot], object] | None = None
    s3_client: S3Client | None = None
    broker_timeout_s: float = DEFAULT_BROKER_TIMEOUT_S
    #: False: every file uploaded, none referenced (a full snapshot, as before references).
    incremental: bool = True

    @property
    def stream(self) -> str:
        return store_stream(self.application_id, self.store)

    def snapshot(
        self, partitions: Iterable[int] | None = None, *, work_dir: Path | None = None
    ) -> list[PartitionSnapshot]:
        """One snapshot per partition with records after its latest (all partitions when
        ``partitions`` is None). The partitions' stores are caught up by one seeder process
        (one JVM start), the changelog's offsets read once."""
        changelog = describe_changelog(
            self.bootstrap_servers, self.stream, timeout_s=self.broker_timeout_s
        )
        wanted = sorted(
            {
                check_partition(p)
                for p in (changelog.partitions if partitions is None else partitions)
            }
        )
        if not wanted:
            return []
        scratch = Path(tempfile.mkdtemp(prefix="snapledger-ks-", dir=work_dir))
        try:
            return self._in(scratch, wanted, changelog)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _store_dir(self, scratch: Path, partition: int) -> Path:
        task = TaskId(0, partition)  # the scratch folder's name only: no task runs there
        return scratch / self.application_id / str(task) / "rocksdb" / self.store

    def _in(
        self, scratch: Path, partitions: list[int], changelog: Changelog
    ) -> list[PartitionSnapshot]:
        bases = {
            p: self._download_latest(p, self._store_dir(scratch, p), changelog) for p in partitions
        }
        generation = open_generation(self.registry, self.stream)
        results = catch_up_tasks(
            scratch,
            self.application_id,
            [TaskId(0, p) for p in partitions],
            self.store,
            self.bootstrap_servers,
        )
        return [
            self._write(
                p,
                self._store_dir(scratch, p),
                bases[p],
                results[TaskId(0, p)],
                changelog,
                generation=generation,
            )
            for p in partitions
        ]

    def _write(
        self,
        partition: int,
        store_dir: Path,
        base: _Base,
        result: CatchUpResult,
        changelog: Changelog,
        *,
        generation: OpenGeneration | None,
    ) -> PartitionSnapshot:
        # An open generation still missing this partition takes the base again when nothing
        # is new: the same state at the same LSN, naming it (docs/kafka-streams.md).
        again = generation is not None and generation.wants(partition, result.offset)
        if result.offset is None or (result.applied == 0 and not again):
            return PartitionSnapshot(
                partition, base.snapshot_id, base.lsn, result, None, base.note + "nothing new"
            )
        input_offsets = snapshot_offsets(
            self.stream,
            partition,
            result.offset,
            result.input_offsets if result.applied else base.inputs,
        )
        writer = SnapshotWriter(
            self.root, self.stream, partition, producer=PRODUCER, s3_client=self.s3_client
        )
        written = writer.write_files(
            result.offset,
            base.epoch,
            store_dir,
            offsets=input_offsets,
            created_at=result.end_read_at,
            reuse=base.ssts if self.incremental else None,
            generation=None if generation is None else generation.generation,
            changelog={
                "log_start_offset": result.log_start_offset,
                "end_offset": result.end_offset,
                "delete_retention_ms": changelog.delete_retention_ms,
                **({} if changelog.topic_id is None else {"topic_id": changelog.topic_id}),
            },
        )
        if self.on_written is not None:
            self.on_written(written)
        return PartitionSnapshot(
            partition,
            base.snapshot_id,
            base.lsn,
            result,
            written,
            base.note
            + f"{result.applied} records applied"
            + ("" if generation is None else f"; names generation {generation.generation}"),
        )

    def latest(self, partition: int) -> tuple[str, int] | None:
        """The partition's latest registered snapshot (id, LSN), None without one."""
        head = self._head(partition)
        snapshot_id, lsn = head.get("latest_snapshot_id"), head.get("latest_lsn")
        if snapshot_id is None or lsn is None:
            return None
        return snapshot_id, lsn

    def _head(self, partition: int) -> dict[str, Any]:
        try:
            return dict(self.registry.latest(self.stream, partition).get("head") or {})
        except RequestRefusedError as refused:
            if refused.answer.get("error") != "not_found":
                raise
            return {}

    def _download_latest(self, partition: int, store_dir: Path, changelog: Changelog) -> _Base:
        """The latest registered snapshot's files into ``store_dir``; a base the changelog
        cannot continue (of another incarnation of the topic, or below its log start) or a
        damaged one is not used: the store then starts empty, from the changelog's start.
        The epoch written is the lineage's highest, one above it on a new incarnation (its
        first snapshot then becomes the latest whatever its LSN: docs/ledger.md)."""
        head = self._head(partition)
        epoch = max(EPOCH, int(head.get("max_epoch") or EPOCH))
        snapshot_id, lsn = head.get("latest_snapshot_id"), head.get("latest_lsn")
        if snapshot_id is None or lsn is None:
            return _Base.empty("no snapshot yet; ", epoch)
        offsets = changelog.partitions.get(partition)
        if offsets is None:
            raise InvalidRequestError(
                f"partition {partition}: {changelog.topic} has no such partition (it has "
                f"{len(changelog.partitions)})"
            )
        record = self.registry.snapshot(self.stream, partition, snapshot_id)["snapshot"]
        named = (record.get("changelog") or {}).get("topic_id")
        other = other_incarnation(changelog.topic, named, changelog.topic_id)
        if other is not None:
            note = f"latest {snapshot_id} is {other}; from empty at epoch {epoch + 1}; "
            return _Base.empty(note, epoch + 1)
        if lsn + 1 < offsets.log_start:
            note = f"latest {snapshot_id} is below the log start; from empty; "
            return _Base.empty(note, epoch)
        try:
            opened = SnapshotReader(self.root, s3_client=self.s3_client).open(
                record["manifest_key"]
            )
            opened.download(store_dir)
        except SnapshotCorruptError as exc:
            shutil.rmtree(store_dir, ignore_errors=True)
            return _Base.empty(f"latest {snapshot_id} is damaged ({exc}); from empty; ", epoch)
        except NotFoundError as exc:  # its manifest is gone since the lookup
            shutil.rmtree(store_dir, ignore_errors=True)
            return _Base.empty(f"latest {snapshot_id} is gone ({exc}); from empty; ", epoch)
        inputs = dict(record.get("offsets") or {})
        inputs.pop(f"{self.stream}-{partition}", None)  # the changelog's own: written anew
        return _Base(
            snapshot_id, lsn, f"continues {snapshot_id}; ", inputs, epoch, held_ssts(opened)
        )


@dataclass(frozen=True)
class _Base:
    """What a partition's snapshot continues: a registered snapshot (its id, LSN and input
    offsets) or nothing (the changelog's start), why (``note``), and the epoch to write."""

    snapshot_id: str | None
    lsn: int | None
    note: str
    inputs: dict[str, int]
    epoch: int
    #: The base's SSTs by name, as the next snapshot references them (none: no base).
    ssts: dict[str, ManifestReference] = field(default_factory=dict)

    @classmethod
    def empty(cls, note: str, epoch: int) -> _Base:
        """No base: the store starts empty, from the changelog's start."""
        return cls(None, None, note, {}, epoch)


def held_ssts(opened: OpenedSnapshot) -> dict[str, ManifestReference]:
    """A snapshot's RocksDB SSTs by name, each as a reference (relative to the lineage's
    folder): its own, and those it references. An SST never changes once written, and the
    store caught up from it keeps every file it did not compact away under its name, so a
    next snapshot references those of one name and size instead of uploading them."""
    folder = opened.prefix.rstrip("/").rpartition("/")[2]
    found = {
        f.path: ManifestReference(path=f"{folder}/{f.path}", size=f.size, checksum=f.checksum)
        for f in opened.files
        if f.path.endswith(SST_SUFFIX) and "/" not in f.path
    }
    for ref in opened.references:
        name = ref.path.rpartition("/")[2]
        if name.endswith(SST_SUFFIX):
            found[name] = ref
    return found


def snapshot_offsets(
    stream: str, partition: int, lsn: int, inputs: dict[str, int]
) -> dict[str, int]:
    """A snapshot's ``offsets``: its input offsets and ``{"{stream}-{partition}": lsn}``.
    Refused past ``MAX_INPUT_PARTITIONS`` input topic-partitions (the manifest's ``offsets``
    hold ``MAX_OFFSETS`` entries, its own changelog partition's among them)."""
    if len(inputs) > MAX_INPUT_PARTITIONS:
        raise InvalidRequestError(
            f"partition {partition}: the changelog's last record names {len(inputs):,} input "
            f"topic-partitions, over the {MAX_INPUT_PARTITIONS:,} a snapshot's offsets hold "
            "(MAX_INPUT_PARTITIONS, docs/limits.md): run the application without the generation "
            "configuration (__iq.consistency.offset.vector.enabled__) to snapshot without them"
        )
    return {**inputs, f"{stream}-{partition}": lsn}
