"""Read a snapshot or a restore back, checking every file against its descriptor first.

``SnapshotReader.open`` reads a snapshot's ``_manifest.json``, ``open_restore`` a restore's
``_restore.json`` (docs/jobs.md); both give an :class:`OpenedSnapshot` (opened_snapshot.py)
whose files are checked before they are used: sizes against one listing, checksums
recomputed from the bytes downloaded; anything that differs raises
:class:`SnapshotCorruptError` naming the file and both values.

``open_latest`` and ``open_generation`` find the snapshot through a pointer object
(``latest.json``, ``generation.json``), which anyone allowed to write to the bucket could
have planted or copied from another lineage: a pointer is followed only when it names the
lineage (or stream) asked for, each snapshot at exactly its own key
(``snapshots/{stream}/{partition}/{lsn:020d}-{id}/``); otherwise, and for an object that is
no pointer at all (not JSON, over ``MAX_POINTER_BYTES``, nested too deep), the reader
refuses with :class:`PointerRefusedError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

from snapledger.adapters.object_keys import check_key
from snapledger.client.descriptors import RESTORE_DESCRIPTOR_NAME, RestoreDescriptorV1
from snapledger.client.errors import PointerRefusedError, SnapshotCorruptError
from snapledger.client.opened_snapshot import DEFAULT_READERS, OpenedSnapshot
from snapledger.client.storage import BlobStore, open_store
from snapledger.errors import NotFoundError
from snapledger.layout import (
    MANIFEST_NAME,
    SnapshotLocation,
    generation_pointer_key,
    latest_pointer_key,
    parse_manifest_key,
    parse_snapshot_prefix,
    restore_prefix,
)
from snapledger.limits import MAX_POINTER_BYTES
from snapledger.models.manifest import MAX_MANIFEST_BYTES, ManifestV1
from snapledger.models.pointer import (
    GenerationPointer,
    LatestPointer,
    PointerT,
    PointerUnreadableError,
    parse_pointer,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["DEFAULT_READERS", "OpenedSnapshot", "SnapshotReader"]


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
