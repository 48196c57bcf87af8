"""What GC needs from the outside world, as small protocols, and the bundle of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from snapledger.clock import Clock
from snapledger.models.gc import GcCheckpoint, HeadPage
from snapledger.models.ledger import LineageId
from snapledger.models.policy import StoredPolicy
from snapledger.ports import JobRunner, JobStore, LedgerReader, LedgerStore, ObjectStore

if TYPE_CHECKING:
    pass


class GcLedger(LedgerStore, LedgerReader, Protocol):
    """The ledger as GC uses it: commands and reads."""


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


@dataclass(frozen=True)
class GcDeps:
    ledger: GcLedger
    store: ObjectStore
    clock: Clock
    lineages: LineageIndex
    policies: PolicyStore
    jobs: JobStore
    runner: JobRunner | None = None  # None: stuck jobs are reported, not reconciled
    shards: ShardQueue | None = None  # None: every run works its lineages itself


class Budget:
    """The time left (e.g. Lambda's remaining time); exhausted below a reserve."""

    def __init__(self, remaining_seconds: Callable[[], float] | None, reserve: float) -> None:
        self._remaining = remaining_seconds
        self._reserve = reserve

    def exhausted(self) -> bool:
        return self._remaining is not None and self._remaining() < self._reserve

    def for_finishing(self) -> Budget:
        """The budget for work already in flight once new work stopped: half the reserve
        (the other half is left for saving the checkpoint)."""
        return Budget(self._remaining, self._reserve / 2)
