"""GC's layout-specific steps of a lineage's pass, as the layout's strategy gives them.

``gc_lineage.py`` runs the same pass for every lineage and asks ``LineageSteps`` (from
``LayoutStrategy.gc_steps``) at each point a layout differs:

1. ``heal``: before planning (a producer's pointer healed, so what it names then counts);
2. ``as_recorded``: the records as the run would plan them (a dry run's heal records
   nothing, so what it found is applied in memory);
3. ``pointers``: the pointer objects GC reads, keeps what they name and repairs;
4. ``lists_every_folder``: whether the listing takes every folder (a producer that evicts
   its own snapshots) or skips the ones the ledger keeps;
5. ``after_listing``: what the listing shows the producer did (evictions recorded, its
   pointer's list reconciled);
6. ``after_deleting``: what follows the deletions (a producer's list pruned).

GC asks them of a ``CollectedStrategy``: a layout's strategy (``layouts/strategy.py``)
with its ``gc_steps``, which ``GcDeps.layouts`` gives for each stream.

``NativeSteps`` is snapledger's own (``latest.json`` and ``generation.json``, nothing
before or after); a foreign layout's steps live in its service module
(``services/restate_gc.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from snapledger.core.retention import Named
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.ledger import Head, SnapshotRecord
from snapledger.ports import ObjectInfo
from snapledger.services.deletion_batch import Finish
from snapledger.services.gc_deps import GcDeps
from snapledger.services.gc_pointers import GenerationPointers, LineagePointers, PointerCheck
from snapledger.services.gc_report import LineageReport

Listing = dict[str, list[ObjectInfo]]


@dataclass(frozen=True)
class StepsContext:
    """What a lineage's pass gives its layout's steps."""

    deps: GcDeps[LayoutStrategy]
    head: Head
    report: LineageReport
    generation_pointers: GenerationPointers
    dry_run: bool


class Pointers(Protocol):
    """A lineage's pointer objects as GC reads them (``gc_pointers.py``)."""

    check: PointerCheck | None

    def named(self, *, members: bool = False) -> Named: ...

    def named_prefix(self, prefix: str) -> str | None: ...

    def repair(self, deps: GcDeps[LayoutStrategy], *, dry_run: bool) -> None: ...


class LineageSteps(Protocol):
    """A layout's steps in a lineage's GC pass (see the module docstring)."""

    @property
    def lists_every_folder(self) -> bool: ...

    @property
    def lists_shared(self) -> bool:
        """Whether the lineage's ``shared/`` folder is listed with it (besides a native
        manifest's layouts, whose references are there)."""
        ...

    @property
    def held_by_producer(self) -> frozenset[str]:
        """After ``after_listing``: keys the producer's own list of snapshots still uses
        that the ledger does not know (never deleted nor swept this run); a key ending with
        '/' holds every file under it."""
        ...

    def heal(self) -> None: ...

    def as_recorded(self, records: list[SnapshotRecord]) -> list[SnapshotRecord]: ...

    def pointers(self) -> Pointers: ...

    def after_listing(
        self, listing: Listing, records: list[SnapshotRecord], pointers: Pointers
    ) -> None: ...

    def after_deleting(self, finish: Finish, pointers: Pointers) -> Finish: ...


class CollectedStrategy(LayoutStrategy, Protocol):
    """A layout's strategy as GC asks it: with its steps."""

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        """GC's layout-specific steps for one lineage's pass (the module docstring)."""
        ...


@dataclass(frozen=True)
class NativeSteps:
    """snapledger's own: its pointers, nothing before planning or after deleting."""

    context: StepsContext
    lists_every_folder: bool = False
    lists_shared: bool = False
    held_by_producer: frozenset[str] = frozenset()

    def heal(self) -> None:
        return None

    def as_recorded(self, records: list[SnapshotRecord]) -> list[SnapshotRecord]:
        return records

    def pointers(self) -> Pointers:
        context = self.context
        return LineagePointers(context.deps.store, context.head, context.generation_pointers)

    def after_listing(
        self, listing: Listing, records: list[SnapshotRecord], pointers: Pointers
    ) -> None:
        return None

    def after_deleting(self, finish: Finish, pointers: Pointers) -> Finish:
        return finish
