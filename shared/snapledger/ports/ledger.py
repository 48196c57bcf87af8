"""Ledger ports: a lineage's log and a stream's log (load, commit, read back), the
read-only views queries use, every lineage's HEAD for GC, the policies, the changelog
segments recorded per lineage and the producer-offsets registry. Adapters:
``adapters/dynamodb_*.py``."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from snapledger.core.lineage import LineageState
    from snapledger.core.stream import StreamState
    from snapledger.layout import SegmentLocation
    from snapledger.models.events import LedgerEvent, StreamEvent
    from snapledger.models.gc import GcCheckpoint, HeadPage
    from snapledger.models.generations import StreamGeneration
    from snapledger.models.ledger import Head, LineageId, SnapshotRecord, StreamHead
    from snapledger.models.policy import StoredPolicy
    from snapledger.models.producer_offsets import ProducerOffsets

T = TypeVar("T")
S = TypeVar("S")
E = TypeVar("E")

#: One log's decision: (the state read, its new events, the state after them).
LogWrite = tuple[S, Sequence[E], S]


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


class PolicyStore(Protocol):
    """Per-stream retention policies, as GC reads them (the stream's log writes them)."""

    def get(self, stream: str) -> StoredPolicy | None: ...


class ProducerOffsetsStore(Protocol):
    """The producer-offsets registry's entries (adapters/dynamodb_producer_offsets.py)."""

    def get(self, producer_id: str) -> ProducerOffsets | None:
        """The stored entry, expired or not (a consistent read), or None."""
        ...

    def create(self, entry: ProducerOffsets, *, replacing: ProducerOffsets | None) -> bool:
        """Write ``entry`` in one conditional write, only if the registry holds no entry for
        its producer (``replacing`` None) or still holds ``replacing``; False if not."""
        ...

    def delete(self, producer_id: str, *, only: ProducerOffsets | None = None) -> bool:
        """Delete the entry (only if it is still ``only``, when given); False if there was
        none (or another)."""
        ...

    def expired(self, now: datetime, *, limit: int) -> builtins.list[ProducerOffsets]:
        """Up to ``limit`` entries expired at ``now``."""
        ...


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
