"""What a lineage's GC pass must not delete because a snapshot references it
(``core/references.py``), read so that no registration can slip past it.

The plan's records come from an index, which may lag a registration by a moment. So once
the pass has marked its doomed snapshots EXPIRING, it reads the lineage's HEAD consistently
(one GetItem): its ``sharing`` names every snapshot with references not DELETED, and any of
them the plan did not see is read consistently too (one BatchGetItem). A registration after
that read sees the doomed snapshots EXPIRING, and ``reference_refusals`` refuses it a file
they used that no registered snapshot references. Nothing is read for a lineage whose pass
deletes nothing and whose snapshots reference nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from snapledger.core.references import live_keys, owners_referenced, referenced_keys
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus
from snapledger.services.gc_deps import GcDeps


@dataclass(frozen=True, slots=True)
class LineageReferences:
    """The lineage's referenced keys, as of after the pass's marks."""

    #: Keys a REGISTERED snapshot references: never deleted.
    live: frozenset[str] = field(default_factory=frozenset)
    #: Keys a REGISTERED or EXPIRING snapshot references: the orphan sweep leaves them (an
    #: EXPIRING snapshot's are its deletion's, once nothing live references them).
    protected: frozenset[str] = field(default_factory=frozenset)
    #: The status of every snapshot whose folder a deleted snapshot references (one whose
    #: record is gone reads DELETED): whether its files there are GC's to delete.
    owners: Mapping[str, SnapshotStatus] = field(default_factory=dict)


NONE = LineageReferences()


def lineage_references(
    deps: GcDeps[LayoutStrategy],
    head: Head,
    records: list[SnapshotRecord],
    statuses: Mapping[str, SnapshotStatus],
    *,
    deleting: bool,
) -> LineageReferences:
    """What the lineage's snapshots reference (``statuses``: after the pass's marks)."""
    if not (deleting or head.sharing or any(r.references for r in records)):
        return NONE
    fresh = deps.ledger.get_head(head.lineage, consistent=True)
    sharing = () if fresh is None or not fresh.sharing else fresh.sharing
    known = {r.sort_key: r for r in records}
    seen = [
        r.model_copy(update={"status": statuses.get(r.sort_key, r.status)})
        for r in known.values()
        if r.references
    ]
    expiring = [r for r in seen if r.status is SnapshotStatus.EXPIRING]
    # The index omits DELETED records: an owner it does not show is read (and gone: DELETED).
    owners = {k: statuses[k] for k in owners_referenced(expiring) if k in statuses}
    unknown = [k for k in owners_referenced(expiring) if k not in statuses]
    missing = [key for key in sharing if key not in known]
    if missing or unknown:
        loaded = deps.ledger.load(head.lineage, [*missing, *unknown]).snapshots
        seen += [loaded[k] for k in missing if k in loaded]
        owners |= {k: loaded[k].status if k in loaded else SnapshotStatus.DELETED for k in unknown}
    root = deps.layouts.for_stream(head.stream).root(head.partition)
    return LineageReferences(
        live=frozenset(live_keys(seen, root)),
        protected=frozenset(referenced_keys(seen, root)),
        owners=owners,
    )
