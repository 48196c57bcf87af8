"""Snapshots of a Kafka Streams store's partitions, made from its changelog topic alone while
the application runs (docs/kafka-streams.md, "Snapshots").

A store partition's snapshot is the store folder of its task, ``rocksdb/{store}/`` (the
RocksDB files, the changelog offset inside them), uploaded as an ``opaque`` snapshot of the
lineage (stream = the changelog topic, partition = the changelog partition) at LSN = the
offset of the last changelog record the store reflects; its manifest's ``changelog`` names
the topic's id (its incarnation). For each partition: the lineage's latest registered
snapshot is continued as the working copy a pass kept of it (``keep_dir``, checked before use:
``working_copy.py``) or downloaded (checksums checked) into the task folder (none, or one the
changelog cannot continue: an empty one; one of another incarnation of the topic, i.e. the
topic was deleted and recreated, makes the snapshot begin the lineage over at the epoch
above the lineage's highest: ``core/changelog_horizon.py``), ``kafka-seeder catch-up
--tasks`` (one process for every partition of the run: one JVM start, not one per
partition; or a request to the resident seeder, ``seeder``) applies the changelog after it
up to the end offset read at start, and when it applied records the store folder is written with
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
from snapledger.kafka_streams.resident_seeder import ResidentSeeder
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.kafka_streams.working_copy import WorkingCopies, working_copies
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
    #: Where each partition's caught-up store is kept between passes, to be continued by the
    #: next pass instead of downloading its base (``working_copy.py``); None: a scratch
    #: folder per pass, removed after it (every base downloaded).
    keep_dir: Path | None = None
    #: The resident seeder process that catches the stores up (``resident_seeder.py``: the
    #: sidecar's, one JVM for all its passes); None: one seeder process per pass.
    seeder: ResidentSeeder | None = field(default=None, compare=False)

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
        if self.keep_dir is not None:
            with working_copies(self.keep_dir, self.application_id, self.store) as copies:
                return self._in(copies, wanted, changelog)
        scratch = Path(tempfile.mkdtemp(prefix="snapledger-ks-", dir=work_dir))
        try:
            return self._in(
                WorkingCopies(scratch, self.application_id, self.store), wanted, changelog
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _in(
        self, copies: WorkingCopies, partitions: list[int], changelog: Changelog
    ) -> list[PartitionSnapshot]:
        bases = {p: self._base(p, copies, changelog) for p in partitions}
        for p in partitions:  # the catch-up changes the copies: their records go first
            copies.release(p)
        generation = open_generation(self.registry, self.stream)
        catch_up = catch_up_tasks if self.seeder is None else self.seeder.catch_up_tasks
        results = catch_up(
            copies.root,
            self.application_id,
            [TaskId(0, p) for p in partitions],
            self.store,
            self.bootstrap_servers,
        )
        made = []
        for p in partitions:
            run = self._write(
                p,
                copies.store_dir(p),
                bases[p],
                results[TaskId(0, p)],
                changelog,
                generation=generation,
            )
            base = bases[p]
            if run.written is not None:
                copies.keep(p, run.written.snapshot_id, held_ssts(run.written))
            elif base.snapshot_id is not None:  # the same state (its small files rewritten)
                copies.keep(p, base.snapshot_id, base.ssts)
            made.append(run)
        return made

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

    def _base(self, partition: int, copies: WorkingCopies, changelog: Changelog) -> _Base:
        """What the partition's snapshot continues, in ``copies.store_dir(partition)``: the
        latest registered snapshot, as the working copy kept of it (``keep_dir``) or
        downloaded with every checksum checked. A base the changelog cannot continue (of
        another incarnation of the topic, or below its log start) or a damaged one is not
        used: the store then starts empty, from the changelog's start. The epoch written is
        the lineage's highest, one above it on a new incarnation (its first snapshot then
        becomes the latest whatever its LSN: docs/ledger.md)."""
        head = self._head(partition)
        epoch = max(EPOCH, int(head.get("max_epoch") or EPOCH))
        snapshot_id, lsn = head.get("latest_snapshot_id"), head.get("latest_lsn")

        def empty(note: str, at_epoch: int = epoch) -> _Base:
            copies.discard(partition)
            return _Base.empty(note, at_epoch)

        if snapshot_id is None or lsn is None:
            return empty("no snapshot yet; ")
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
            return empty(
                f"latest {snapshot_id} is {other}; from empty at epoch {epoch + 1}; ", epoch + 1
            )
        if lsn + 1 < offsets.log_start:
            return empty(f"latest {snapshot_id} is below the log start; from empty; ")
        return self._continued(
            partition, copies, (snapshot_id, lsn), record=record, epoch=epoch, empty=empty
        )

    def _continued(
        self,
        partition: int,
        copies: WorkingCopies,
        latest: tuple[str, int],
        *,
        record: dict[str, Any],
        epoch: int,
        empty: Callable[[str], _Base],
    ) -> _Base:
        """The latest registered snapshot ``record`` as the base: its working copy when
        that stands for it, else downloaded (``empty`` when it is gone or damaged)."""
        snapshot_id, lsn = latest
        inputs = dict(record.get("offsets") or {})
        inputs.pop(f"{self.stream}-{partition}", None)  # the changelog's own: written anew
        try:
            opened = SnapshotReader(self.root, s3_client=self.s3_client).open(
                record["manifest_key"]
            )
        except NotFoundError as exc:  # its manifest is gone since the lookup
            return empty(f"latest {snapshot_id} is gone ({exc}); from empty; ")
        ssts = held_ssts(opened)
        note = ""
        if self.keep_dir is not None:
            problem = copies.problem(partition, snapshot_id, ssts)
            if problem is None:
                note = f"continues {snapshot_id} (its working copy); "
                return _Base(snapshot_id, lsn, note, inputs, epoch, ssts)
            note = f"working copy not used ({problem}): downloaded; "
        copies.discard(partition)
        try:
            opened.download(copies.store_dir(partition))
        except SnapshotCorruptError as exc:
            return empty(f"latest {snapshot_id} is damaged ({exc}); from empty; ")
        except NotFoundError as exc:  # its files are gone since the lookup
            return empty(f"latest {snapshot_id} is gone ({exc}); from empty; ")
        return _Base(snapshot_id, lsn, note + f"continues {snapshot_id}; ", inputs, epoch, ssts)


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


def held_ssts(opened: OpenedSnapshot | WrittenSnapshot) -> dict[str, ManifestReference]:
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
