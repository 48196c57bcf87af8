"""Ports: the small interfaces the services need from the outside world.

Adapters implement them for AWS (DynamoDB, S3, EMR Serverless) and for the embedded
local runtime (DynamoDB Local, ``file://``, a local SparkSession).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from snapledger.core.job_sizing import PartitionInput
    from snapledger.core.lineage import LineageState
    from snapledger.core.stream import StreamState
    from snapledger.layout import SegmentLocation
    from snapledger.models.events import LedgerEvent, StreamEvent
    from snapledger.models.gc import GcCheckpoint, HeadPage
    from snapledger.models.generations import StreamGeneration
    from snapledger.models.jobs import JobRecord, JobResources, PartitionPlan
    from snapledger.models.ledger import Head, LineageId, SnapshotRecord, StreamHead
    from snapledger.models.policy import StoredPolicy

T = TypeVar("T")
S = TypeVar("S")
E = TypeVar("E")

#: One log's decision: (the state read, its new events, the state after them).
LogWrite = tuple[S, Sequence[E], S]

#: S3's DeleteObjects and ListObjectsV2 limit; file:// keeps the same batching.
MAX_KEYS_PER_REQUEST = 1000


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One stored object, as a listing returns it."""

    key: str
    size: int
    last_modified: datetime
    #: S3's ETag as the listing gives it (it changes when the object is written again with
    #: other content); None where the store has none (the file store).
    etag: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What a batch delete did: keys deleted (or already absent) and per-key failures."""

    deleted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (key, reason)


class ObjectStore(Protocol):
    """An object store rooted at a URI (``s3://bucket/prefix`` or ``file:///dir``).

    Keys are relative to the root and use '/' separators.
    """

    @property
    def uri(self) -> str: ...

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` in key order, one request per 1,000 keys."""
        ...

    def list_page(
        self, prefix: str, *, start_after: str | None = None, limit: int = MAX_KEYS_PER_REQUEST
    ) -> builtins.list[ObjectInfo]:
        """One page (one request) of at most ``limit`` objects after ``start_after``."""
        ...

    def list_dirs(self, prefix: str) -> Iterator[str]:
        """The immediate sub-prefixes of ``prefix`` (each ending in '/')."""
        ...

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes. NotFoundError if absent; ManifestTooLargeError-style
        InvalidRequestError if ``max_bytes`` is given and exceeded."""
        ...

    def get_tail(self, key: str, length: int) -> bytes:
        """The object's last ``length`` bytes (all of it when shorter): one ranged GET.
        NotFoundError if absent."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """The object's info, or None if absent."""
        ...

    def stored_checksum(self, key: str, algorithm: str) -> bytes | None:
        """The ``algorithm`` digest the store holds for the object (S3: its additional
        checksum, one HeadObject), or None when it holds none of that algorithm (or only a
        composite one of a multipart upload). NotFoundError if the object is absent."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Write (overwrite) an object."""
        ...

    def create(self, key: str, data: bytes) -> None:
        """Write only if absent (S3 ``IfNoneMatch: *``); ObjectExistsError otherwise."""
        ...

    def get_versioned(self, key: str, *, max_bytes: int | None = None) -> tuple[bytes, str] | None:
        """The object's bytes and its version tag (S3: its ETag), or None if absent: one
        GET. The tag is what ``replace`` must be given to overwrite exactly this version.
        With ``max_bytes``, at most ``max_bytes + 1`` bytes are read (more than ``max_bytes``
        means the object is larger); the tag is still the whole object's."""
        ...

    def replace(self, key: str, data: bytes, *, if_match: str) -> None:
        """Overwrite the object only if it is still the version ``if_match`` names (S3
        ``IfMatch``); StaleVersionError when it changed or is gone."""
        ...

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        """Delete keys in batches of at most 1,000 per request; absent keys count as deleted."""
        ...


class ObjectHolds(Protocol):
    """Legal holds on stored objects (S3 Object Lock; docs/deploy.md, "The latest protected
    in the bucket"). A held object version cannot be deleted by anyone, nor expired by a
    lifecycle rule, until its hold is released; a delete without a version id still hides
    it behind a delete marker."""

    def hold(self, key: str) -> None:
        """Put a legal hold on the object's current version (idempotent). NotFoundError if
        the object is absent."""
        ...

    def release_holds(self, prefix: str) -> int:
        """Release the hold of every version of every object under ``prefix`` (current or
        not; idempotent): the number of versions released."""
        ...


def chunked(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Split ``items`` into lists of at most ``size``."""
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class LedgerStore(Protocol):
    """The event-sourced ledger: load a lineage, commit a decision, read it back."""

    def load(self, lineage: LineageId, snapshot_keys: Sequence[str] = ()) -> LineageState:
        """HEAD and the named snapshot records, read consistently in one request."""
        ...

    def commit(
        self,
        before: LineageState,
        events: Sequence[LedgerEvent],
        after: LineageState,
        *,
        request_token: str,
    ) -> None:
        """Write the decision atomically, conditioned on ``before``'s versions.

        Raises LostRaceError when the lineage changed, TransientStoreError when a retry of
        the same write may succeed.
        """
        ...

    def get_event(self, lineage: LineageId, seq: int) -> LedgerEvent | None:
        """One event by sequence number (consistent read)."""
        ...

    def record_unplaceable_manifest(self, key: str, reason: str, at: datetime) -> bool:
        """Record a manifest whose key names no lineage; False if it was already recorded."""
        ...


#: The most items a listing gives in one page (a console query's ``limit`` is bounded by it).
MAX_PAGE = 1000


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing; pass ``cursor`` back to get the next (None: no more)."""

    items: builtins.list[T]
    cursor: str | None


class LedgerReader(Protocol):
    """Read-only views of the ledger, for queries."""

    def get_head(self, lineage: LineageId, *, consistent: bool = False) -> Head | None:
        """The lineage's HEAD in one read, or None if it has no history."""
        ...

    def get_snapshot(self, lineage: LineageId, sort_key: str) -> SnapshotRecord | None: ...

    def find_snapshot(self, lineage: LineageId, snapshot_id: str) -> SnapshotRecord | None:
        """The snapshot with this id, whatever its status, in one read (None: no such id)."""
        ...

    def list_registered(
        self,
        lineage: LineageId,
        *,
        max_sort_key: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[SnapshotRecord]:
        """REGISTERED snapshots only, highest LSN first, at or below ``max_sort_key``."""
        ...

    def list_snapshots(
        self,
        lineage: LineageId,
        *,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = True,
        max_sort_key: str | None = None,
    ) -> Page[SnapshotRecord]:
        """Snapshots by LSN, one page at a time."""
        ...

    def list_live(
        self, lineage: LineageId, *, limit: int = 1000, cursor: str | None = None
    ) -> Page[SnapshotRecord]:
        """REGISTERED, EXPIRING and REJECTED records (never DELETED), in any order."""
        ...

    def list_events(
        self, lineage: LineageId, *, after_seq: int = 0, limit: int = 100, cursor: str | None = None
    ) -> Page[LedgerEvent]:
        """Events in sequence order, one page at a time."""
        ...


class StreamLogStore(Protocol):
    """A stream's own log (its policy, its generations): load, commit, read it back."""

    def load(self, stream: str, generations: Sequence[int] = ()) -> StreamState:
        """The stream's HEAD, stored policy and the named generations, read consistently
        in one request."""
        ...

    def commit_with_lineage(
        self,
        ledger: LedgerStore,
        lineage: LogWrite[LineageState, LedgerEvent],
        stream: LogWrite[StreamState, StreamEvent],
        *,
        request_token: str,
    ) -> None:
        """Write a lineage's decision and the stream's in one transaction (LostRaceError
        when either changed)."""
        ...

    def get_generation(self, stream: str, generation: int) -> StreamGeneration | None:
        """One generation's record, or None if it was never requested."""
        ...

    def list_generations(
        self, stream: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[StreamGeneration]:
        """The stream's generations, newest first, one page at a time."""
        ...

    def commit(
        self,
        before: StreamState,
        events: Sequence[StreamEvent],
        after: StreamState,
        *,
        request_token: str,
    ) -> None:
        """Write the decision atomically, conditioned on ``before``'s versions.

        Raises LostRaceError when the stream changed, TransientStoreError when a retry of
        the same write may succeed.
        """
        ...

    def get_event(self, stream: str, seq: int) -> StreamEvent | None:
        """One event by sequence number (consistent read)."""
        ...

    def get_head(self, stream: str) -> StreamHead | None:
        """The stream's HEAD (``version``: its last event's seq), or None if it has none."""
        ...

    def list_events(
        self, stream: str, *, after_seq: int = 0, limit: int = 100, cursor: str | None = None
    ) -> Page[StreamEvent]:
        """Events in sequence order, one page at a time."""
        ...


@dataclass(frozen=True)
class JobRunSpec:
    """What the runner needs to start a job: its id (the client token) and arguments,
    and what it reads, by partition (its base's and its changelog's bytes, which size it
    on EMR Serverless); empty when unknown: the application's default sizes."""

    job_id: str
    kind: str
    stream: str
    root: str
    partitions: builtins.list[PartitionPlan]
    inputs: dict[int, PartitionInput] = field(default_factory=dict)


@dataclass(frozen=True)
class JobRunStatus:
    state: str
    reason: str | None = None


@dataclass(frozen=True)
class FoundJobRun:
    """A run the runner holds for a job: its id and its current state."""

    run_id: str
    state: str
    reason: str | None = None


class JobRunner(Protocol):
    """Runs data-plane jobs: EMR Serverless in AWS, a local SparkSession on one machine."""

    def start(self, spec: JobRunSpec) -> str:
        """Start the job and return its run id; the same ``job_id`` starts it only once."""
        ...

    def resources(self, spec: JobRunSpec) -> JobResources | None:
        """The workers ``start`` gives this job, when the runner sizes it from its input;
        None when it runs on defaults."""
        ...

    def status(self, run_id: str) -> JobRunStatus:
        """The run's current state and, when it failed, why."""
        ...

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        """The run ``start`` created for ``job_id`` (named by it) no earlier than
        ``created_after``, or None when there is none (one still running first, if several).
        Raises (a ``SnapledgerError``) when it cannot tell: nothing may be concluded then."""
        ...


class JobStore(Protocol):
    """Job items (``JOB#{job_id}``): each update conditioned on the version read."""

    def create(self, job: JobRecord) -> JobRecord:
        """Create the job, or return the one already stored under its id."""
        ...

    def get(self, job_id: str) -> JobRecord | None: ...

    def replace(self, old: JobRecord, new: JobRecord) -> bool:
        """Write ``new`` if the stored version is still ``old.version``; False if not."""
        ...

    def find_by_run_id(self, run_id: str) -> JobRecord | None: ...

    def list_jobs(self, *, limit: int = 100, cursor: str | None = None) -> Page[JobRecord]: ...


class Ledger(LedgerStore, LedgerReader, Protocol):
    """The ledger as the services use it: commands and reads on one store."""


class LineageIndex(Protocol):
    """Every lineage's HEAD, a page at a time, and the checkpoint of an unfinished run."""

    def list_heads(
        self, *, stream: str | None = None, after: LineageId | None = None, limit: int = 100
    ) -> HeadPage: ...

    def load_checkpoint(self) -> GcCheckpoint | None: ...

    def save_checkpoint(self, checkpoint: GcCheckpoint, *, read_version: int | None) -> bool: ...

    def clear_checkpoint(self, *, read_version: int) -> bool: ...


class ShardQueue(Protocol):
    """Where a coordinating GC run sends shards of lineages (an SQS queue)."""

    def send(self, bodies: Sequence[str]) -> list[int]:
        """Send up to ten message bodies in one request; the indexes of the ones refused."""
        ...


class PolicyStore(Protocol):
    """Per-stream retention policies, as GC reads them (the stream's log writes them)."""

    def get(self, stream: str) -> StoredPolicy | None: ...


class SegmentStore(Protocol):
    """Segments seen per lineage (adapters/dynamodb_changelog.py)."""

    def record(self, segment: SegmentLocation, size: int, at: datetime) -> bool: ...

    def ending_after(
        self, lineage: LineageId, lsn: int | None
    ) -> Iterable[tuple[int, int, int]]: ...

    def rejection_recorded(self, lineage: LineageId, key: str) -> bool:
        """Whether the non-segment file at ``key`` was recorded rejected already."""
        ...

    def record_rejection(self, lineage: LineageId, key: str, reason: str, at: datetime) -> bool:
        """Mark the file at ``key`` recorded rejected; False if it was already marked."""
        ...


@dataclass(frozen=True, slots=True)
class QueuedManifest:
    """One message: the manifest key (the body), its lineage (group) and its dedup id."""

    key: str
    group_id: str
    deduplication_id: str


class RegistrationQueue(Protocol):
    def send(self, messages: Sequence[QueuedManifest]) -> None:
        """Send every message, or raise ``StoreUnavailableError`` naming the ones not sent."""
        ...
