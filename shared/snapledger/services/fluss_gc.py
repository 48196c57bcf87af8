"""The Fluss KV layout's steps in a lineage's (a bucket's) GC pass (``gc_steps.py``).

Fluss lists each bucket's completed snapshots in ZooKeeper and restores a tablet server
from the highest one listed; its coordinator drops the snapshots beyond
``kv.snapshot.num-retained`` (node first, then the files no snapshot it retains uses). The
two retentions compose so: Fluss's ``num-retained`` is set above what snapledger's policy
keeps (docs/fluss.md), and snapledger expires by its policy (min count AND min age, holds,
pins), dropping a snapshot's ZooKeeper node before any of its files. Each pass:

1. pointers: the bucket's snapshots as ZooKeeper lists them (one read). The highest is
   Fluss's latest: kept, whatever the policy (``named_by_latest_json``); a folder of one
   it lists is never swept as an orphan;
2. the listing takes every folder and the bucket's ``shared/`` (Fluss evicts its own);
3. after listing: the REGISTERED snapshots Fluss evicted (folder gone, node gone) recorded
   so; the node of every EXPIRING snapshot dropped (a crash after leaves it EXPIRING: the
   next run drops again, finding none); and the files of every snapshot ZooKeeper lists
   that the ledger has not registered (a registration still to come, or one refused) read
   from its ``_METADATA`` (one GET each) and kept from deletion and from the sweep.

No node is dropped in a dry run. Without ZooKeeper (``SNAPLEDGER_FLUSS_ZOOKEEPER`` unset)
the lineage is not collected: its pass fails saying so, and nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from snapledger.core.retention import PROTECTIONS, Named
from snapledger.layouts import fluss_keys as fluss
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.limits import MAX_MANIFEST_BYTES
from snapledger.models.commands import RecordEvicted
from snapledger.models.ledger import SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.models.retention_reasons import KeepReason
from snapledger.ports.producers import FlussSnapshotNodes
from snapledger.services.commands import execute
from snapledger.services.deletion_batch import Finish
from snapledger.services.fluss_heal import BucketHeal, FlussHeal
from snapledger.services.fluss_snapshots import all_keys
from snapledger.services.gc_deps import GcDeps
from snapledger.services.gc_pointers import PointerCheck
from snapledger.services.gc_steps import Listing, Pointers, StepsContext

EVICTED = (
    "its folder holds no object and ZooKeeper lists it no more: Fluss dropped it (beyond its "
    "kv.snapshot.num-retained) or its files were deleted outside snapledger"
)
#: Fluss's default ``table.log.ttl``.
DEFAULT_LOG_TTL = timedelta(days=7)
NO_ZOOKEEPER = (
    "snapledger does not know Fluss's ZooKeeper (SNAPLEDGER_FLUSS_ZOOKEEPER): it cannot tell "
    "which snapshots Fluss still lists, so nothing of this bucket was collected"
)


@dataclass
class FlussPointers:
    """A bucket's snapshots as ZooKeeper lists them, read once."""

    nodes: FlussSnapshotNodes
    table_id: int
    bucket: int
    check: PointerCheck | None = None
    _listed: set[int] | None = field(default=None, repr=False)

    @property
    def listed(self) -> set[int]:
        if self._listed is None:
            self._listed = self.nodes.listed(self.table_id, self.bucket)
        return self._listed

    def named(self, *, members: bool = False) -> Named:
        if not self.listed:
            return {}
        latest = max(self.listed)
        return {snapshot_sort_key(latest, f"snap-{latest}"): (KeepReason.NAMED_BY_LATEST_JSON,)}

    def named_prefix(self, prefix: str) -> str | None:
        number = fluss.folder_number(prefix.rstrip("/").rpartition("/")[2])
        if number is not None and number in self.listed:
            return f"ZooKeeper lists snap-{number}: Fluss still uses it"
        return None

    def repair(self, deps: GcDeps[LayoutStrategy], *, dry_run: bool) -> None:
        return None  # Fluss writes its nodes; GC repairs nothing there


@dataclass
class FlussSteps:
    """A Fluss bucket's steps (see the module docstring)."""

    context: StepsContext
    table: fluss.FlussTable
    nodes: FlussSnapshotNodes
    #: How long Fluss keeps its log (``table.log.ttl``): how old a snapshot heal falls back
    #: to may be.
    log_ttl: timedelta = DEFAULT_LOG_TTL
    lists_every_folder: bool = True
    lists_shared: bool = True
    #: Keys of the files of snapshots ZooKeeper lists that the ledger has not registered.
    held_by_producer: frozenset[str] = frozenset()
    _pointers: FlussPointers | None = field(default=None, repr=False)
    _heal: FlussHeal | None = field(default=None, repr=False)  # also the report's part

    def heal(self) -> None:
        context = self.context
        pointers = self.pointers()
        assert isinstance(pointers, FlussPointers)
        context.report.heal = self._heal = BucketHeal(
            context.deps,
            self.table,
            context.head.lineage,
            self.nodes,
            pointers.listed,
            self.log_ttl,
            dry_run=context.dry_run,
        ).run()

    def as_recorded(self, records: list[SnapshotRecord]) -> list[SnapshotRecord]:
        """A dry run's heal records nothing: the snapshots it found broken, marked so."""
        heal = self._heal
        if not (self.context.dry_run and heal is not None and heal.broken):
            return records
        broken = {s for users in heal.breaks.values() for s in users}
        problems = tuple(heal.problems)
        return [
            r.model_copy(update={"broken": problems})
            if r.snapshot_id in broken and not r.broken
            else r
            for r in records
        ]

    def pointers(self) -> Pointers:
        if self._pointers is None:
            self._pointers = FlussPointers(
                self.nodes, self.table.table_id, self.context.head.partition
            )
        return self._pointers

    def after_listing(
        self, listing: Listing, records: list[SnapshotRecord], pointers: Pointers
    ) -> None:
        assert self._pointers is not None  # pointers() runs before the listing
        listed = self._pointers.listed
        self.context.report.notes.extend(offsets_going_back(records))
        self._record_evictions(listing, records, listed)
        self._drop_expiring(records, listed)
        self.held_by_producer = frozenset(self._unregistered_files(records, listed))

    def after_deleting(self, finish: Finish, pointers: Pointers) -> Finish:
        return finish

    def _record_evictions(
        self, listing: Listing, records: list[SnapshotRecord], listed: set[int]
    ) -> None:
        context, report = self.context, self.context.report
        gone = [
            r
            for r in records
            if r.status is SnapshotStatus.REGISTERED
            and r.lsn not in listed
            and _folder(r.manifest_key) not in listing
        ]
        report.evicted = [r.snapshot_id for r in gone]
        kept = {k.record.sort_key: k.reasons for k in report.plan.kept}
        for record in gone:
            reasons = [r.value for r in kept.get(record.sort_key, ()) if r in PROTECTIONS]
            if reasons:
                report.notes.append(
                    f"{record.snapshot_id} was dropped by Fluss though snapledger's policy keeps "
                    f"it ({', '.join(reasons)}): raise kv.snapshot.num-retained (docs/fluss.md)"
                )
            if context.dry_run:
                report.notes.append(f"{record.snapshot_id} was dropped by Fluss: a run records it")
                continue
            execute(
                context.deps.ledger,
                RecordEvicted(
                    stream=record.stream,
                    partition=record.partition,
                    lsn=record.lsn,
                    snapshot_id=record.snapshot_id,
                    reason=EVICTED,
                ),
                context.deps.clock.now(),
                snapshot_keys=(record.sort_key,),
            )

    def _drop_expiring(self, records: list[SnapshotRecord], listed: set[int]) -> None:
        context = self.context
        expiring = sorted(
            (r for r in records if r.status is SnapshotStatus.EXPIRING and r.lsn in listed),
            key=lambda r: r.lsn,
        )
        if context.dry_run:  # nothing was marked: what the run would mark
            doomed = sorted(d.record.lsn for d in context.report.plan.doomed)
            if doomed:
                names = ", ".join(f"snap-{n}" for n in doomed if n in listed)
                context.report.notes.append(f"a run drops the ZooKeeper nodes of {names}")
            return
        for record in expiring:
            self.nodes.drop(self.table.table_id, record.partition, record.lsn)
            listed.discard(record.lsn)

    def _unregistered_files(self, records: list[SnapshotRecord], listed: set[int]) -> set[str]:
        registered = {r.lsn for r in records if r.status is SnapshotStatus.REGISTERED}
        store, bucket = self.context.deps.store, self.context.head.partition
        held: set[str] = set()
        for number in sorted(set(listed) - registered):
            location = fluss.FlussLocation(bucket, number)
            root = location.root(self.table.prefix)
            try:
                raw = store.get(
                    location.metadata_key(self.table.prefix), max_bytes=MAX_MANIFEST_BYTES
                )
                held.update(all_keys(fluss.parse_metadata(raw, self.table, location), root))
            except Exception as exc:  # unreadable: keep every shared file this run
                self.context.report.notes.append(
                    f"ZooKeeper lists snap-{number}, whose _METADATA could not be read ({exc}): "
                    "every shared file of the bucket is kept this run"
                )
                held.add(root + fluss.SHARED_FOLDER + "/")
        return held


def offsets_going_back(records: list[SnapshotRecord]) -> list[str]:
    """One note per live snapshot whose ``log_offset`` is below that of one with a lower id:
    Fluss's offsets only grow within a bucket, so its ``_METADATA`` is not as Fluss wrote it
    (registration reads no other snapshot's record; GC has them all)."""
    notes, highest = [], None
    for record in sorted(records, key=lambda r: r.lsn):
        offset = (record.offsets or {}).get("log_offset")
        if offset is None:
            continue
        if highest is not None and offset < highest[1]:
            notes.append(
                f"{record.snapshot_id}'s log_offset {offset:,} is below {highest[0]}'s "
                f"{highest[1]:,}: Fluss's log offsets only grow in a bucket, so its _METADATA "
                "is not as Fluss wrote it; check it before the bucket restores from it"
            )
        elif highest is None or offset > highest[1]:
            highest = (record.snapshot_id, offset)
    return notes


def _folder(manifest_key: str) -> str:
    return manifest_key.rpartition("/")[0] + "/"
