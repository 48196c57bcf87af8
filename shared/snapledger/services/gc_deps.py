"""What GC needs from the outside world, as small protocols, and the bundle of them.

``GcDeps`` is generic over what its catalog's strategies are: GC's pass asks them for its
steps (``GcDeps[CollectedStrategy]``, ``gc_steps.py``), the services that only read keys
take any (``GcDeps[LayoutStrategy]``), so this module imports none of GC's own modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from snapledger.clock import Clock
from snapledger.layouts.lineage import Layouts
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.ports import (
    JobRunner,
    JobStore,
    Ledger,
    LineageIndex,
    ObjectHolds,
    ObjectStore,
    PolicyStore,
    ShardQueue,
    StreamLogStore,
)

#: What the catalog's strategies are to the service holding the deps.
S_co = TypeVar("S_co", bound=LayoutStrategy, covariant=True)


@dataclass(frozen=True)
class GcDeps(Generic[S_co]):
    ledger: Ledger
    store: ObjectStore
    clock: Clock
    lineages: LineageIndex
    policies: PolicyStore
    jobs: JobStore
    #: Each stream's snapshot layout (the catalog the composition builds:
    #: ``strategies/catalog.py``; Restate prefixes, Kafka Streams topics, native for the rest).
    layouts: Layouts[S_co]
    runner: JobRunner | None = None  # None: stuck jobs are reported, not reconciled
    shards: ShardQueue | None = None  # None: every run works its lineages itself
    #: The streams' own logs: which stream snapshots' members to keep, and failing the
    #: overdue ones (None: every member is kept, and nothing is failed).
    streams: StreamLogStore | None = None
    #: Legal holds to release before marking DELETED (SNAPLEDGER_PROTECT_LATEST); None: off.
    holds: ObjectHolds | None = None
    #: Hands a manifest the ledger has no record of to registration (the queue in AWS,
    #: in-process locally) and says what became of it; None: such a prefix is only kept.
    register: Callable[[str], str] | None = None


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
