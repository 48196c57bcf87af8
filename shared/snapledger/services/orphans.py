"""The orphan sweep: snapshot prefixes the ledger has no live record of.

A prefix under ``snapshots/{stream}/{partition}/`` is a candidate when the ledger has no
record of it (files uploaded, manifest never registered: a writer that died, or a lost
event) or only a DELETED one (objects written again after GC deleted it). It is deleted
only when its newest object is older than the grace window (default 24h, never under 1h):
a writer may be between its last upload and its registration, and a prefix with anything
recent is never touched.

A prefix that holds a ``_manifest.json`` the ledger has no record of (its event lost, or
its registration failed until the queue gave up) is never deleted: it is handed to
registration instead (``GcDeps.register``), which records it REGISTERED, or REJECTED with
its reason; a REJECTED one's files are then collected as any rejected snapshot's are.
Only a prefix with no manifest is an orphan.

Lineages with no HEAD (``sweep_unledgered_streams``) are found by listing the folders of
each stream: ``snapshots/`` and the root of each configured layout that has one of its own
(``LayoutCatalog.rooted``, ``LayoutStrategy.stream_root``: a Restate prefix, whose
partition may have no HEAD when every upload failed). There too a folder with its layout's
manifest (``metadata.json``) is handed to registration, a producer's ``latest.json``
(outside every snapshot folder) is never touched, and only folders whose newest object is
older than the grace window go.

No record: before any delete the prefix is *claimed* in the ledger (``OrphanClaimed``,
decided on a consistent read). If a registration got there first, the claim is refused
and nothing is deleted; if the manifest arrives after the claim, registration finds the
record and answers "conflict", so a snapshot whose files are being deleted can never
become REGISTERED. The claimed prefix then follows the usual EXPIRING → DELETED path, so
a crash half-way is finished by the next run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from snapledger.core.references import SHARED_FOLDER
from snapledger.errors import InvalidKeyError, SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.layout import MANIFEST_NAME, SNAPSHOTS, check_stream_name
from snapledger.layouts.lineage import SnapshotFolder
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.gc_commands import ClaimOrphan
from snapledger.models.ledger import LineageId, SnapshotStatus, snapshot_sort_key
from snapledger.ports import ObjectInfo
from snapledger.services.commands import execute
from snapledger.services.deletion_batch import DeletionBatch, DeletionUnit, LineageTicket
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import OrphanOutcome
from snapledger.services.object_deletion import list_lineage


def sweep_lineage(
    deps: GcDeps[LayoutStrategy],
    lineage: LineageId,
    statuses: Mapping[str, SnapshotStatus],
    listing: Mapping[str, list[ObjectInfo]],
    config: GcConfig,
    *,
    dry_run: bool,
    budget: Budget,
    batch: DeletionBatch,
    ticket: LineageTicket,
    protected: Collection[str] = (),
    shared: Sequence[ObjectInfo] = (),
) -> tuple[list[OrphanOutcome], bool]:
    """Sweep one lineage's prefixes, as ``list_lineage`` found them, and its ``shared/``
    folder's objects (``shared``). ``statuses``: the ledger's records (sort key → status);
    ``protected``: keys a REGISTERED or EXPIRING snapshot references, never deleted here
    (``services/gc_references.py``). Deletions go into ``batch``. Returns the outcomes and
    whether the time budget ran out first."""
    outcomes: list[OrphanOutcome] = []
    layout = deps.layouts.for_stream(lineage.stream)
    for prefix, listed in sorted(listing.items()):
        location = layout.folder(lineage.partition, prefix)
        if location is None:  # list_lineage returns only the layout's snapshot folders
            continue
        status = statuses.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        if status is not None and status is not SnapshotStatus.DELETED:
            continue  # the ledger owns it: never touched here
        objects = [info for info in listed if info.key not in protected]
        if budget.exhausted() or batch.stopped:
            return outcomes, True
        try:
            outcome = _sweep_prefix(
                deps,
                lineage,
                location,
                objects=objects,
                status=status,
                config=config,
                dry_run=dry_run,
                queue=functools.partial(batch.add, ticket),
            )
        except SnapledgerError as exc:
            outcome = OrphanOutcome(prefix, "error", note=str(exc))
        if outcome is not None:
            outcomes.append(outcome)
    if shared:
        if budget.exhausted() or batch.stopped:
            return outcomes, True
        outcome = _sweep_shared(
            deps,
            shared,
            protected,
            config,
            dry_run=dry_run,
            queue=functools.partial(batch.add, ticket),
        )
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes, False


def _sweep_shared(
    deps: GcDeps[LayoutStrategy],
    shared: Sequence[ObjectInfo],
    protected: Collection[str],
    config: GcConfig,
    *,
    dry_run: bool,
    queue: Callable[[DeletionUnit], None],
) -> OrphanOutcome | None:
    """The files of the lineage's ``shared/`` folder no snapshot references that are older
    than the grace window (an upload in flight keeps its files: registration refuses a
    shared file nothing registered references once it is ``MAX_NEW_SHARED_FILE_AGE_S`` old,
    at most half the window)."""
    now = deps.clock.now()
    doomed = [
        info
        for info in shared
        if info.key not in protected and now - info.last_modified > config.orphan_grace
    ]
    if not doomed:
        return None
    marker = f"/{SHARED_FOLDER}/"
    prefix = doomed[0].key[: doomed[0].key.index(marker) + len(marker)]
    newest = max(info.last_modified for info in doomed)
    outcome = OrphanOutcome(prefix, "would_delete", len(doomed), newest)
    outcome.note = f"shared files no snapshot references, older than {config.orphan_grace_hours:g}h"
    if not dry_run:
        queue(_unit(outcome, [info.key for info in doomed], sort_key=None, manifest_name=""))
    return outcome


def sweep_unledgered_streams(
    deps: GcDeps[LayoutStrategy],
    config: GcConfig,
    *,
    run_id: str,
    stream: str | None,
    after_stream: str | None,
    dry_run: bool,
    budget: Budget,
) -> tuple[list[OrphanOutcome], bool, str | None]:
    """Sweep the lineages that have snapshot prefixes (under ``snapshots/`` or a layout's
    own root) but no HEAD in the ledger.

    Walks streams in name order after ``after_stream``, a deletion batch per stream.
    Returns the outcomes, whether it finished, and the last stream it finished (where a
    stopped sweep resumes).
    """
    outcomes: list[OrphanOutcome] = []
    done: str | None = after_stream
    for name in _streams(deps, stream):
        if after_stream is not None and name <= after_stream:
            continue
        if budget.exhausted():
            return outcomes, False, done
        found, stopped = _sweep_unledgered_stream(
            deps, config, name, run_id=run_id, dry_run=dry_run, budget=budget
        )
        outcomes += found
        if stopped:
            return outcomes, False, done
        done = name
    return outcomes, True, done


def _sweep_unledgered_stream(
    deps: GcDeps[LayoutStrategy],
    config: GcConfig,
    name: str,
    *,
    run_id: str,
    dry_run: bool,
    budget: Budget,
) -> tuple[list[OrphanOutcome], bool]:
    outcomes: list[OrphanOutcome] = []
    errors: list[str] = []
    batch = DeletionBatch(deps, run_id=run_id, budget=budget)
    with_head = _partitions_with_head(deps, name, budget)
    if with_head is None:
        return outcomes, True
    for partition in _partitions(deps, name):
        if partition in with_head:
            continue  # swept with its lineage in the lineage pass
        lineage = LineageId(stream=name, partition=partition)
        layout = deps.layouts.for_stream(name)
        shared: list[ObjectInfo] = []  # no snapshot is registered: none is referenced
        listing, stopped = list_lineage(
            deps.store,
            layout,
            partition,
            skip=lambda _: False,
            stop=budget.exhausted,
            shared=shared if layout.manifest_name == MANIFEST_NAME else None,
        )
        if stopped:
            return outcomes, True
        ticket = batch.open(lineage, errors)
        found, stopped = sweep_lineage(
            deps,
            lineage,
            {},
            listing,
            config,
            dry_run=dry_run,
            budget=budget,
            batch=batch,
            ticket=ticket,
            shared=shared,
        )
        batch.close(ticket)
        outcomes += found
        if stopped:
            return outcomes, True
    batch.flush()
    outcomes += [OrphanOutcome(_stream_folder(deps, name), "error", note=e) for e in errors]
    return outcomes, batch.stopped


def _sweep_prefix(  # noqa: PLR0911 - one return per outcome
    deps: GcDeps[LayoutStrategy],
    lineage: LineageId,
    location: SnapshotFolder,
    *,
    objects: list[ObjectInfo],
    status: SnapshotStatus | None,
    config: GcConfig,
    dry_run: bool,
    queue: Callable[[DeletionUnit], None],
) -> OrphanOutcome | None:
    prefix = location.prefix
    if not objects:
        return None
    newest = max(info.last_modified for info in objects)
    now = deps.clock.now()
    outcome = OrphanOutcome(prefix, "in_flight", len(objects), newest)
    if now - newest <= config.orphan_grace:
        outcome.note = f"an object arrived within the {config.orphan_grace_hours:g}h window"
        return outcome
    keys = [info.key for info in objects]
    manifest_name = deps.layouts.for_stream(lineage.stream).manifest_name
    if status is None and location.manifest_key in keys:
        return _hand_to_registration(deps, location, outcome, dry_run=dry_run)
    if dry_run:
        outcome.action = "would_delete"
        return outcome
    if status is SnapshotStatus.DELETED:
        outcome.note = "objects written again after the snapshot was deleted"
        queue(_unit(outcome, keys, sort_key=None, manifest_name=manifest_name))
        return outcome
    claimed = _claim(
        deps, lineage, location, newest=newest, count=len(objects), config=config, now=now
    )
    if not claimed:
        outcome.action, outcome.note = "registered_meanwhile", "the ledger recorded it first"
        return outcome
    outcome.note = "no ledger record"
    sort_key = snapshot_sort_key(location.lsn, location.snapshot_id)
    queue(_unit(outcome, keys, sort_key=sort_key, manifest_name=manifest_name))
    return outcome


def _hand_to_registration(
    deps: GcDeps[LayoutStrategy], location: SnapshotFolder, outcome: OrphanOutcome, *, dry_run: bool
) -> OrphanOutcome:
    """A prefix holding a manifest the ledger never recorded: registered, never deleted."""
    outcome.note = "holds a manifest the ledger has no record of: registered, not deleted"
    if dry_run:
        outcome.action = "would_register"
        return outcome
    if deps.register is None:
        outcome.action = "kept"
        outcome.note = "holds a manifest the ledger has no record of: kept (no registration here)"
        return outcome
    try:
        answer = deps.register(location.manifest_key)
    except Exception as exc:  # reported; the prefix stays for the next run
        outcome.action = "error"
        outcome.note = f"its manifest could not be handed to registration, kept: {exc}"
        return outcome
    outcome.action = "registered"
    outcome.note = f"holds a manifest the ledger had no record of: registration says {answer}"
    return outcome


def _unit(
    outcome: OrphanOutcome, keys: list[str], *, sort_key: str | None, manifest_name: str
) -> DeletionUnit:
    """The prefix's deletion; until the batch sends it the outcome says it is claimed."""
    outcome.action = "claimed"

    def deleted(count: int) -> None:
        outcome.action, outcome.objects = "deleted", count

    def failed(why: str) -> None:
        outcome.action, outcome.note = "error", why

    return DeletionUnit(
        prefix=outcome.prefix,
        keys=keys,
        sort_key=sort_key,
        manifest_name=manifest_name,
        on_deleted=deleted,
        on_failed=failed,
    )


def _claim(
    deps: GcDeps[LayoutStrategy],
    lineage: LineageId,
    location: SnapshotFolder,
    *,
    newest: datetime,
    count: int,
    config: GcConfig,
    now: datetime,
) -> bool:
    """Claim the prefix in the ledger; True if it is EXPIRING (ours, or another run's)."""
    key = snapshot_sort_key(location.lsn, location.snapshot_id)
    result = execute(
        deps.ledger,
        ClaimOrphan(
            stream=lineage.stream,
            partition=lineage.partition,
            lsn=location.lsn,
            snapshot_id=location.snapshot_id,
            manifest_key=location.manifest_key,
            object_count=count,
            newest_object_at=newest,
            grace_hours=config.orphan_grace_hours,
        ),
        now,
        snapshot_keys=(key,),
    )
    record = result.state.snapshots.get(key)
    return record is not None and record.status is SnapshotStatus.EXPIRING


def _streams(deps: GcDeps[LayoutStrategy], stream: str | None) -> list[str]:
    """The streams to sweep, in name order: the folders under ``snapshots/`` and each
    stream whose layout has a root of its own (whether or not the ledger knows it)."""
    if stream is not None:
        return [stream]
    names = {layout.stream for layout in deps.layouts.rooted}
    for prefix in deps.store.list_dirs(f"{SNAPSHOTS}/"):
        name = prefix.removeprefix(f"{SNAPSHOTS}/").rstrip("/")
        try:
            names.add(check_stream_name(name))
        except InvalidKeyError:
            continue
    return sorted(names)


def _stream_folder(deps: GcDeps[LayoutStrategy], stream: str) -> str:
    """The folder holding the stream's partition folders (``snapshots/{stream}/``, or its
    layout's own root)."""
    return deps.layouts.for_stream(stream).stream_root


def _partitions(deps: GcDeps[LayoutStrategy], stream: str) -> list[int]:
    folder = _stream_folder(deps, stream)
    found = []
    for prefix in deps.store.list_dirs(folder):
        text = prefix.removeprefix(folder).rstrip("/")
        if text.isdigit() and str(int(text)) == text:
            found.append(int(text))
    return found


def _partitions_with_head(
    deps: GcDeps[LayoutStrategy], stream: str, budget: Budget
) -> set[int] | None:
    """The stream's partitions that have a HEAD; None if the budget ran out first (a
    partial set would make lineages with a HEAD look like orphans)."""
    found: set[int] = set()
    after: LineageId | None = None
    while True:
        if budget.exhausted():
            return None
        page = deps.lineages.list_heads(stream=stream, after=after, limit=1000)
        found |= {head.partition for head in page.heads}
        if not page.more or not page.heads:
            return found
        after = page.heads[-1].lineage
