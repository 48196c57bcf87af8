"""Register a snapshot whose manifest arrived: validate, then ``RegisterSnapshot``.

Expected outcomes (rejected, fenced, conflict, duplicate) are answers, recorded in the
ledger with their reasons; only unexpected failures (the store or table unreachable)
raise, so the asynchronous invoke is retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum

from snapledger.clock import Clock
from snapledger.layout import SnapshotLocation
from snapledger.layouts.lineage import Layouts
from snapledger.layouts.strategy import LayoutStrategy, Placed, Refused
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.events import LatestAdvanced, SnapshotRegistered, SnapshotRejected
from snapledger.models.ledger import LineageId, SnapshotStatus, snapshot_sort_key
from snapledger.models.manifest import ManifestV1
from snapledger.models.pointer import LatestPointer
from snapledger.ports import Ledger, ObjectHolds, ObjectStore, StreamLogStore
from snapledger.services.commands import CommandResult, RetryPolicy
from snapledger.services.generations import MemberRegistration, register_member
from snapledger.services.latest_pointer import publish_generation, publish_latest
from snapledger.services.lineage_combiner import LineageCombiner
from snapledger.services.reference_reads import reference_keys

#: The process's one writer per lineage (see ``lineage_combiner``).
COMBINER = LineageCombiner()


class Outcome(StrEnum):
    """What registration answered."""

    BECAME_LATEST = "became_latest"
    RECORDED = "recorded"  # registered, but not newer than the latest
    DUPLICATE = "duplicate"  # already recorded: nothing written
    FENCED = "fenced"
    REJECTED = "rejected"
    CONFLICT = "conflict"
    #: The manifest (or Restate ``metadata.json``) was gone when it was read: deleted by its
    #: producer (Restate evicting beyond ``num-retained``) or by GC after it arrived.
    #: Nothing is recorded (there is nothing to reject); ``register`` counts and logs it.
    VANISHED = "vanished"


@dataclass(frozen=True)
class RegistrationResult:
    outcome: Outcome
    manifest_key: str
    stream: str | None = None
    partition: int | None = None
    lsn: int | None = None
    snapshot_id: str | None = None
    reason: str | None = None
    latest_lsn: int | None = None
    latest_snapshot_id: str | None = None
    #: Attempts of the transaction that carried it, and how many lost a race (None: none ran).
    attempts: int | None = None
    lost_races: int | None = None
    #: For a manifest naming a generation: whether it counted for it, and if not, why.
    generation: int | None = None
    generation_counted: bool | None = None
    generation_reason: str | None = None
    generation_completed: bool | None = None
    #: The layout whose strategy checked it (native, restate, kafka-streams; None: placed
    #: by none, its key names no snapshot).
    layout: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RegistrationFailed:
    """A manifest whose registration failed unexpectedly (store or table unreachable)."""

    manifest_key: str
    error: Exception


def register_manifest(
    key: str,
    *,
    ledger: Ledger,
    store: ObjectStore,
    clock: Clock,
    retry: RetryPolicy | None = None,
    combiner: LineageCombiner = COMBINER,
    streams: StreamLogStore | None = None,
    holds: ObjectHolds | None = None,
    layouts: Layouts[LayoutStrategy],
) -> RegistrationResult:
    """Record the snapshot whose ``_manifest.json`` is at ``key`` (relative to the root)."""
    (answer,) = register_manifests(
        [key],
        ledger=ledger,
        store=store,
        clock=clock,
        retry=retry,
        combiner=combiner,
        streams=streams,
        holds=holds,
        layouts=layouts,
    )
    if isinstance(answer, RegistrationFailed):
        raise answer.error
    return answer


@dataclass(frozen=True)
class Registrar:
    """What registration needs, as one object: the composition's ports and catalog
    (``entrypoints/register.py``: ``registrar``), built once per delivery."""

    ledger: Ledger
    store: ObjectStore
    clock: Clock
    layouts: Layouts[LayoutStrategy]
    retry: RetryPolicy | None = None
    combiner: LineageCombiner = COMBINER
    streams: StreamLogStore | None = None  # required when a manifest names a generation
    holds: ObjectHolds | None = None  # the latest protected in the bucket; None: off


#: An arrived key, and where its catalog placed it (``Layouts.place``).
Arrived = tuple[str, Placed | Refused]


def register_manifests(
    keys: Sequence[str],
    *,
    ledger: Ledger,
    store: ObjectStore,
    clock: Clock,
    retry: RetryPolicy | None = None,
    combiner: LineageCombiner = COMBINER,
    streams: StreamLogStore | None = None,
    holds: ObjectHolds | None = None,
    layouts: Layouts[LayoutStrategy],
) -> list[RegistrationResult | RegistrationFailed]:
    """Record each manifest of ``keys``, each placed by ``layouts``: ``register_placed``."""
    registrar = Registrar(ledger, store, clock, layouts, retry, combiner, streams, holds)
    return register_placed([(key, layouts.place(key)) for key in keys], registrar)


def register_placed(
    arrived: Sequence[Arrived], registrar: Registrar
) -> list[RegistrationResult | RegistrationFailed]:
    """Record each manifest of ``arrived`` (placed once, by whoever received it); one
    answer per key, in order.

    Each manifest is validated on its own; a lineage's commands are then committed
    together, a transaction per ``MAX_BATCH_COMMANDS``, through ``combiner`` (one writer
    per lineage in this process). A failure fails only its key, or the keys of the
    lineage whose transaction failed. A manifest naming a generation is committed with
    its stream's log (``streams``: required then), so it counts for the generation in the
    same transaction (``services/generations.py``); the registration that completes a
    generation publishes ``generation.json``. After a lineage's commit, its ``latest.json`` is
    published (``services/latest_pointer.py``); if that fails, the lineage's keys fail
    too, so their redelivery (a duplicate) publishes it again. With ``holds`` (the latest
    protected in the bucket), every valid manifest's files are held before the commit
    (``services/latest_protection.py``). Each key is checked, as it was placed (one its
    placement refused is recorded unplaceable, with the reason), by its stream's strategy
    (``LayoutStrategy.register_command``: what registration checks); ``latest.json`` is
    published only where the strategy says snapledger owns the pointer
    (a producer, e.g. Restate, owns its own).
    """
    ledger, store, clock = registrar.ledger, registrar.store, registrar.clock
    answers: list[RegistrationResult | RegistrationFailed | None] = [None] * len(arrived)
    lineages: dict[tuple[str, int], list[tuple[int, SnapshotLocation, RegisterSnapshot]]] = {}
    manifests: dict[str, ManifestV1] = {}  # manifest key -> the manifest, when valid
    checked_by: dict[int, str] = {}  # index -> the layout whose strategy checked it
    for index, (key, placed) in enumerate(arrived):
        if isinstance(placed, Refused):
            try:
                ledger.record_unplaceable_manifest(key, placed.reason, clock.now())
            except Exception as failure:  # answered per key
                answers[index] = RegistrationFailed(key, failure)
            else:
                answers[index] = RegistrationResult(Outcome.REJECTED, key, reason=placed.reason)
            continue
        location = placed.location
        checked_by[index] = placed.strategy.name
        try:
            command, manifest = placed.strategy.register_command(placed, store, registrar.holds)
        except Exception as failure:  # answered per key
            answers[index] = RegistrationFailed(key, failure)
            continue
        if manifest is not None:
            manifests[key] = manifest
        lineage = lineages.setdefault((location.stream, location.partition), [])
        lineage.append((index, location, command))
    for (stream, _), members in lineages.items():
        for index, answer in _register_lineage(
            members,
            manifests,
            publishes_latest=registrar.layouts.for_stream(stream).owner == "snapledger",
            ledger=ledger,
            store=store,
            streams=registrar.streams,
            clock=clock,
            retry=registrar.retry,
            combiner=registrar.combiner,
        ):
            answers[index] = answer
    return [
        replace(answer, layout=checked_by[index])
        if isinstance(answer, RegistrationResult) and index in checked_by
        else answer
        for index, answer in enumerate(answers)
        if answer is not None
    ]


def _register_lineage(
    all_members: Sequence[tuple[int, SnapshotLocation, RegisterSnapshot]],
    manifests: dict[str, ManifestV1],
    *,
    publishes_latest: bool,
    ledger: Ledger,
    store: ObjectStore,
    streams: StreamLogStore | None,
    clock: Clock,
    retry: RetryPolicy | None,
    combiner: LineageCombiner,
) -> list[tuple[int, RegistrationResult | RegistrationFailed]]:
    """One lineage's commands committed, then its pointers published: (index, answer) of
    each. A command that failed fails alone; a failed publication fails the lineage's
    committed keys, whose redelivery (a duplicate) publishes again."""
    committed = _commit_lineage(
        all_members,
        ledger=ledger,
        streams=streams,
        clock=clock,
        retry=retry,
        combiner=combiner,
    )
    answers: list[tuple[int, RegistrationResult | RegistrationFailed]] = []
    members, results = [], []
    notes: dict[str, MemberRegistration] = {}
    for member, (result, note) in zip(all_members, committed, strict=True):
        key = member[2].manifest_key
        if isinstance(result, Exception):  # answered per key: the others go on
            answers.append((member[0], RegistrationFailed(key, result)))
            continue
        members.append(member)
        results.append(result)
        if note is not None:
            notes[key] = note
    if not members:
        return answers
    outcomes: list[RegistrationResult | RegistrationFailed] = [
        _result(location, command, result, notes.get(command.manifest_key))
        for (_, location, command), result in zip(members, results, strict=True)
    ]
    try:
        if publishes_latest:
            _publish_latest(members, results, manifests, ledger=ledger, store=store)
        completing = [note for note in notes.values() if _completes(note)]
        if streams is not None and completing:
            newest = max(completing, key=lambda note: note.stream.head.version)
            publish_generation(streams, members[0][1].stream, store=store, known=newest.stream)
    except Exception as failure:  # the keys are retried: a duplicate publishes again
        outcomes = [RegistrationFailed(command.manifest_key, failure) for *_, command in members]
    answers += [(m[0], outcome) for m, outcome in zip(members, outcomes, strict=True)]
    return answers


def _commit_lineage(
    members: Sequence[tuple[int, SnapshotLocation, RegisterSnapshot]],
    *,
    ledger: Ledger,
    streams: StreamLogStore | None,
    clock: Clock,
    retry: RetryPolicy | None,
    combiner: LineageCombiner,
) -> list[tuple[CommandResult | Exception, MemberRegistration | None]]:
    """One lineage's commands committed: the plain ones through ``combiner``, then each one
    whose manifest names a generation with its stream (``register_member``). In
    ``members``' order, each one's result (or the exception that failed it alone) and,
    for a manifest naming a generation, how it counted."""
    plain = [(i, m) for i, m in enumerate(members) if _generation_of(m[2]) is None]
    named = [(i, m) for i, m in enumerate(members) if _generation_of(m[2]) is not None]
    results: dict[int, tuple[CommandResult | Exception, MemberRegistration | None]] = {}
    related = reference_keys(ledger, [command for _, (_, _, command) in plain])
    submitted = [
        (command, (snapshot_sort_key(location.lsn, location.snapshot_id), *others))
        for (_, (_, location, command)), others in zip(plain, related, strict=True)
    ]
    for (i, _), result in zip(
        plain, combiner.run(ledger, submitted, clock, retry=retry), strict=True
    ):
        results[i] = (result, None)
    for i, (_, _, command) in named:
        if streams is None:
            raise TypeError("register_manifests needs streams= for a manifest naming a generation")
        try:
            note = register_member(ledger, streams, command, clock.now(), retry=retry)
        except Exception as failure:  # its own failure: the others go on
            results[i] = (failure, None)
        else:
            results[i] = (note.result, note)
    return [results[i] for i in range(len(members))]


def _completes(note: MemberRegistration) -> bool:
    """Whether ``generation.json`` may be behind after ``note``: its commit completed the
    generation, or it is a redelivery of a member that counted (whose first delivery may
    have crashed before the pointer was written)."""
    return note.completed or (note.counted and not note.result.events)


def _generation_of(command: RegisterSnapshot) -> int | None:
    return None if command.summary is None else command.summary.generation


def _publish_latest(
    members: Sequence[tuple[int, SnapshotLocation, RegisterSnapshot]],
    results: Sequence[CommandResult],
    manifests: dict[str, ManifestV1],
    *,
    ledger: Ledger,
    store: ObjectStore,
) -> None:
    """``latest.json`` after a commit that advanced the lineage's latest, or after a
    redelivered manifest (whose first delivery may have crashed before writing it)."""
    if all(result.events and not _advanced(result) for result in results):
        return  # only new snapshots that did not advance the latest: nothing to publish
    head = max((result.state.head for result in results), key=lambda h: h.version)
    known = None
    for (_, location, command), result in zip(members, results, strict=True):
        if (location.lsn, location.snapshot_id) != (head.latest_lsn, head.latest_snapshot_id):
            continue
        record = result.state.snapshots.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        manifest = manifests.get(command.manifest_key)
        if record is not None and manifest is not None:
            known = LatestPointer.of(record, manifest)
    lineage = LineageId(stream=head.stream, partition=head.partition)
    publish_latest(lineage, head, ledger=ledger, store=store, known=known)


def _advanced(result: CommandResult) -> bool:
    return any(isinstance(event, LatestAdvanced) for event in result.events)


def _result(
    location: SnapshotLocation,
    command: RegisterSnapshot,
    result: CommandResult,
    member: MemberRegistration | None = None,
) -> RegistrationResult:
    key = command.manifest_key
    head = result.state.head
    base: dict[str, object] = {}
    if member is not None:
        base = {
            "generation": member.generation,
            "generation_counted": member.counted,
            "generation_reason": member.reason,
            "generation_completed": member.completed or None,
        }
    base |= {
        "manifest_key": key,
        "stream": location.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
        "latest_lsn": head.latest_lsn,
        "latest_snapshot_id": head.latest_snapshot_id,
        "attempts": result.attempts,
        "lost_races": result.lost_races,
    }
    events = result.events
    if not events:
        record = result.state.snapshots.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        if record is None and command.manifest_missing:
            gone = (
                f"{key} was gone when registration read it (deleted since it arrived, e.g. "
                "evicted by its producer): nothing was recorded"
            )
            return RegistrationResult(Outcome.VANISHED, reason=gone, **base)  # type: ignore[arg-type]
        reason = (
            record.rejection_reason if record and record.status is SnapshotStatus.REJECTED else None
        )
        return RegistrationResult(Outcome.DUPLICATE, reason=reason, **base)  # type: ignore[arg-type]
    first = events[0]
    if isinstance(first, SnapshotRejected):
        outcome = {
            "fenced": Outcome.FENCED,
            "conflict": Outcome.CONFLICT,
            "invalid": Outcome.REJECTED,
        }[first.code]
        return RegistrationResult(outcome, reason=first.reason, **base)  # type: ignore[arg-type]
    assert isinstance(first, SnapshotRegistered)
    became_latest = any(isinstance(e, LatestAdvanced) for e in events)
    outcome = Outcome.BECAME_LATEST if became_latest else Outcome.RECORDED
    return RegistrationResult(outcome, **base)  # type: ignore[arg-type]
