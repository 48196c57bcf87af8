"""The layout strategy: everything registration, GC and a consumer need to know of a layout.

A layout (native, restate, kafka-streams, …) is one module of ``snapledger.strategies``
holding one class that satisfies ``LayoutStrategy``, registered by one line of
``layouts/registry.py``; the ``LayoutCatalog`` (``strategies/catalog.py``) builds it for the
streams the layout map gives it. Registration, GC,
the orphan sweep and the local router ask the strategy; none of them branches on a
layout's name (``tests/unit/test_layout_strategy.py`` checks that they import no layout
module and call nothing layout-specific). What a strategy answers:

- **keys**: ``root(partition)`` (the folder every snapshot of a lineage is directly
  under), ``folder(partition, prefix)`` (the snapshot a folder holds, or None: not one of
  the layout's), ``stream_root`` (the folder holding the partitions' folders: the orphan
  sweep's root for a lineage with no HEAD), ``manifest_name`` (written last by the
  producer, deleted last by GC), and, for a layout with a root of its own, ``place(key)``
  (is an arriving object its snapshot's manifest, or why not);
- **what registration checks**: ``register_command`` reads and checks the arrived
  manifest and returns the ``RegisterSnapshot`` (REJECTED with the reason when a check
  fails);
- **who owns the pointer**: ``owner`` (snapledger publishes ``latest.json`` for its own;
  a producer's pointer is only healed, by compare-and-swap);
- **what GC may delete**: ``gc_steps`` (heal before planning, evictions after listing,
  the pointer objects GC reads, repairs and keeps, pruning after deleting), which GC
  declares itself (``services/gc_steps.py``: ``CollectedStrategy``), and
  ``unrestorable`` (why a retained snapshot is not counted toward ``min_count``: the
  next restorable one takes its slot; ``core/retention.py``);
- **how a consumer boots**: ``boot`` (the documented step, e.g. a module to call).

This protocol, the keys and the checks here are pure, below the services; a strategy
(above them) imports the services that do its I/O, so a service holding a strategy never
imports one. docs/layouts.md lists the contract and how to add one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from snapledger.errors import InvalidKeyError
from snapledger.layout import SnapshotLocation
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.models.ledger import SnapshotRecord

if TYPE_CHECKING:
    from snapledger.models.commands import RegisterSnapshot
    from snapledger.models.manifest import ManifestV1
    from snapledger.ports import ObjectHolds, ObjectStore


@dataclass(frozen=True, slots=True)
class SnapshotFolder:
    """One snapshot's folder in a lineage, as its layout reads it."""

    prefix: str  # with a trailing slash
    lsn: int
    snapshot_id: str
    manifest_key: str


def folder_of_manifest(manifest_key: str) -> str:
    """The folder of the snapshot whose manifest (or ``metadata.json``) is at the key, with
    its trailing slash: every layout keeps a snapshot's manifest directly in its folder."""
    folder, slash, _ = manifest_key.rpartition("/")
    if not slash:
        raise InvalidKeyError(f"{manifest_key!r} is in no folder: it is no snapshot's manifest")
    return folder + "/"


@dataclass(frozen=True, slots=True)
class LineageFacts:
    """What a lineage's records tell a strategy about every one of its snapshots (the
    horizon of the log they continue from): ``LayoutStrategy.facts``."""

    #: The highest log-start offset of the changelog any of its snapshots of the current
    #: incarnation reported.
    log_start_offset: int | None = None
    #: The current incarnation of the log (a Kafka topic id): the one its registered
    #: snapshot with the highest (epoch, LSN) that names one names; None: none names one.
    topic_id: str | None = None


NO_FACTS = LineageFacts()


@dataclass(frozen=True, slots=True)
class Placed:
    """An arriving object that is a snapshot's manifest: the strategy of its stream, and
    which snapshot it describes."""

    strategy: LayoutStrategy
    location: SnapshotLocation
    key: str


@dataclass(frozen=True, slots=True)
class Refused:
    """An arriving object that is no snapshot's manifest: why. ``manifest`` is True when
    it is named as one (registration records it REJECTED with ``reason``), False when it
    is another object (a data file, a producer's pointer: the arrival is ignored)."""

    reason: str
    manifest: bool


class LayoutStrategy(Protocol):
    """One stream's layout (see the module docstring)."""

    @property
    def name(self) -> LayoutName: ...

    @property
    def owner(self) -> PointerOwner: ...

    @property
    def manifest_name(self) -> str: ...

    @property
    def stream(self) -> str: ...

    @property
    def stream_root(self) -> str:
        """The folder holding the stream's partition folders, with a trailing slash."""
        ...

    @property
    def boot(self) -> str:
        """How a consumer boots from the layout's snapshots (a module, a command)."""
        ...

    def root(self, partition: int) -> str: ...

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None: ...

    def register_command(
        self, placed: Placed, store: ObjectStore, holds: ObjectHolds | None
    ) -> tuple[RegisterSnapshot, ManifestV1 | None]:
        """The arrived manifest read and checked: its command, and the native manifest
        when it is one and valid (what ``latest.json`` is published from)."""
        ...

    def facts(self, records: Iterable[SnapshotRecord]) -> LineageFacts:
        """What the lineage's records say about its log (``unrestorable`` reads it)."""
        ...

    def unrestorable(
        self, record: SnapshotRecord, facts: LineageFacts, now: datetime
    ) -> str | None:
        """Why a REGISTERED snapshot cannot be restored from (None: it can), so retention
        does not count it."""
        ...


class RootedStrategy(LayoutStrategy, Protocol):
    """A layout with a root of its own (a bucket prefix outside ``snapshots/``: Restate's,
    Fluss's): the catalog asks each such strategy to place an arriving key before the
    native keys."""

    def place(self, key: str) -> Placed | Refused | None:
        """The snapshot whose manifest is at ``key``; why an object under the root is none;
        None when ``key`` is outside the root."""
        ...


def broken_reason(record: SnapshotRecord) -> str | None:
    """Every layout's first reason: the snapshot was found broken (heal's check)."""
    if not record.broken:
        return None
    return f"found broken: {record.broken[0]}"


class RestorableUnlessBroken:
    """``facts`` and ``unrestorable`` of a layout whose snapshots stay restorable until
    found broken (native, Restate): a strategy class inherits them."""

    __slots__ = ()

    def facts(self, records: Iterable[SnapshotRecord]) -> LineageFacts:
        return NO_FACTS

    def unrestorable(
        self, record: SnapshotRecord, facts: LineageFacts, now: datetime
    ) -> str | None:
        return broken_reason(record)
