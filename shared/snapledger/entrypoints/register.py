"""Register the manifests a delivery announces: every record answered, failures raised last.

Expected outcomes (``became_latest``, ``recorded``, ``duplicate``, ``fenced``,
``rejected``, ``conflict``, ``vanished``: the manifest was gone when read, logged as a
warning with its key and counted, nothing recorded) are answers, as are records that are no manifest
(``ignored``) or no S3 record at all (``invalid_record``). A record whose registration
fails unexpectedly does not stop the others: they are all processed, then the failure is
raised so that Lambda retries the asynchronous invoke (and, after its retries, sends the
event to the on-failure destination). Re-registering the records that did succeed is a
``duplicate``, so a retry is safe.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from snapledger.entrypoints.answers import (
    Answer,
    Intake,
    MetricSink,
    RecordsFailedError,
    count,
    ok,
)
from snapledger.entrypoints.registration_queue import (
    SQS_EVENT,
    QueuedMessage,
    deduplication_id,
    parse_queued,
    placed_group,
)
from snapledger.entrypoints.s3_events import (
    Arrival,
    InvalidRecord,
    ObjectArrival,
    arrivals_intake,
    key_in_store,
)
from snapledger.entrypoints.stream_metrics import emit_for_stream
from snapledger.layouts.lineage import Layouts
from snapledger.layouts.strategy import LayoutStrategy, Placed, Refused
from snapledger.ports import QueuedManifest, RegistrationQueue
from snapledger.services.registration import (
    Arrived,
    Outcome,
    Registrar,
    RegistrationFailed,
    RegistrationResult,
    register_placed,
)

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

IGNORED = "ignored"
INVALID_RECORD = "invalid_record"
FAILED = "failed"
QUEUED = "queued"  # handed to the registration queue (AWS): registered by its consumer
#: Counters are ``Registration_{outcome}``, e.g. ``Registration_became_latest``.
METRIC_PREFIX = "Registration_"
MALFORMED_EVENT_METRIC = "Registration_malformed_event"
#: The intake's two shapes: S3 arrivals (neither shape will ever succeed, so not retried)
#: and the registration queue's messages (not our queue's: redelivering cannot help).
ARRIVALS_INTAKE = arrivals_intake(MALFORMED_EVENT_METRIC)
QUEUED_INTAKE = Intake(parse_queued, SQS_EVENT, MALFORMED_EVENT_METRIC)
#: Also counted per stream (``Registration_rejected``, ``Registration_fenced``,
#: ``Registration_vanished``).
PER_STREAM_OUTCOMES = (Outcome.REJECTED, Outcome.FENCED, Outcome.VANISHED)

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecordAnswer:
    """What happened to one record of a delivery."""

    key: str | None
    outcome: str
    reason: str | None = None
    snapshot_id: str | None = None
    lsn: int | None = None
    #: The layout whose strategy checked it (native, restate, kafka-streams).
    layout: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class RegistrationBatch:
    """The answers of one delivery, and the unexpected failures among them."""

    records: list[RecordAnswer] = field(default_factory=list)
    failures: list[tuple[str, Exception]] = field(default_factory=list)

    def answer_or_raise(self) -> Answer:
        """The summary answer; RecordsFailedError (from the first cause) if any failed."""
        if self.failures:
            raise RecordsFailedError(self.failures) from self.failures[0][1]
        return self.answer()

    def answer(self, **fields: Any) -> Answer:
        """The summary answer: every record's, and the count of each outcome."""
        counts = Counter(record.outcome for record in self.records)
        return ok(
            records=[r.to_dict() for r in self.records],
            counts=dict(sorted(counts.items())),
            **fields,
        )


def register_arrivals(
    arrivals: Sequence[Arrival], rt: Runtime, metrics: MetricSink
) -> RegistrationBatch:
    """Register (or, with a registration queue, queue) every manifest among ``arrivals``.

    Without a queue (the local runtime) a delivery's manifests are registered here, each
    lineage's together, one writer per lineage in the process. With one (AWS), each
    manifest naming a lineage is sent to the FIFO queue with its lineage as the message
    group (``queued``); one naming none is recorded here, as it cannot be grouped.
    """
    batch = RegistrationBatch()
    answers: list[RecordAnswer | None] = []
    manifests: list[tuple[int, ObjectArrival, Arrived]] = []  # each placed once, here
    for arrival in arrivals:
        answer, arrived = _triage(arrival, rt.store.uri, rt.layouts)
        answers.append(answer)
        if arrived is not None:
            manifests.append((len(answers) - 1, arrival, arrived))  # type: ignore[arg-type]
    queue = rt.registration_queue
    if queue is not None:
        queued = [m for m in manifests if placed_group(m[2][1]) is not None]
        manifests = [m for m in manifests if placed_group(m[2][1]) is None]
        for index, answer in zip(
            (i for i, _, _ in queued), _queue(queued, queue, batch), strict=True
        ):
            answers[index] = answer
    results = register_placed([arrived for _, _, arrived in manifests], registrar(rt))
    for (index, arrival, (key, _)), result in zip(manifests, results, strict=True):
        answers[index] = _answer(key, result, batch, arrival.request_id)
    for answer in answers:
        assert answer is not None
        count(metrics, METRIC_PREFIX + answer.outcome)
        batch.records.append(answer)
    return batch


def register_queued(
    messages: Sequence[QueuedMessage], rt: Runtime, metrics: MetricSink
) -> tuple[RegistrationBatch, list[str]]:
    """Register the manifests a FIFO delivery holds; the message ids to be redelivered.

    Only a manifest whose own registration failed is redelivered: one manifest's failure
    never holds back another of its lineage (message group), which is registered and
    deleted from the queue (issue 27: a poison manifest must not take its lineage's
    valid ones to the failure queue with it).
    """
    batch = RegistrationBatch()
    results = register_placed([(m.key, rt.layouts.place(m.key)) for m in messages], registrar(rt))
    retry: list[str] = []
    for message, result in zip(messages, results, strict=True):
        answer = _answer(message.key, result, batch, message.message_id)
        if answer.outcome == FAILED:
            retry.append(message.message_id)
        count(metrics, METRIC_PREFIX + answer.outcome)
        batch.records.append(answer)
    return batch, retry


def manifest_registrar(rt: Runtime) -> Callable[[str], str]:
    """Registration for a manifest found with no ledger record (the orphan sweep's): sent
    to the registration queue where there is one (AWS: registered by its consumer, with
    its lineage's other manifests), else registered here. Returns what became of it."""
    queue = rt.registration_queue

    def register(key: str) -> str:
        placed = rt.layouts.place(key)
        group = placed_group(placed)
        if queue is not None and group is not None:
            # Repeated sweeps within SQS's 5 minutes send nothing new.
            dedup = deduplication_id(rt.store.uri, key, "orphan-sweep")
            queue.send([QueuedManifest(key, group, dedup)])
            return QUEUED
        (result,) = register_placed([(key, placed)], registrar(rt))
        if isinstance(result, RegistrationFailed):
            raise result.error
        return result.outcome.value + (f" ({result.reason})" if result.reason else "")

    return register


def registrar(rt: Runtime) -> Registrar:
    """What registration needs of the runtime, as one object."""
    return Registrar(
        ledger=rt.ledger,
        store=rt.store,
        clock=rt.clock,
        layouts=rt.layouts,
        streams=rt.streams,
        holds=rt.holds,
    )


def _triage(
    arrival: Arrival, store_uri: str, layouts: Layouts[LayoutStrategy]
) -> tuple[RecordAnswer | None, Arrived | None]:
    """The answer of a record that names no manifest, or the manifest key it names with
    its placement."""
    if isinstance(arrival, InvalidRecord):
        problems = "; ".join(f"{p['field']}: {p['problem']}" for p in arrival.fields)
        _log.error("record %d is not an S3 record: %s", arrival.index, problems)
        return RecordAnswer(None, INVALID_RECORD, reason=problems), None
    key, placed = _manifest_key(arrival, store_uri, layouts)
    if isinstance(placed, str):
        return RecordAnswer(key, IGNORED, reason=placed), None
    return None, (key, placed)


def _queue(
    queued: list[tuple[int, ObjectArrival, Arrived]],
    queue: RegistrationQueue,
    batch: RegistrationBatch,
) -> list[RecordAnswer]:
    messages = [
        QueuedManifest(
            key=key,
            group_id=placed_group(placed) or "",
            deduplication_id=deduplication_id(arrival.bucket, key, arrival.write_token),
        )
        for _, arrival, (key, placed) in queued
    ]
    if not messages:
        return []
    try:
        queue.send(messages)
    except Exception as exc:  # answered per record, raised at the end: the delivery is retried
        _log.exception(
            "queueing %d manifest(s) failed; the delivery will be retried", len(messages)
        )
        batch.failures += [(m.key, exc) for m in messages]
        return [
            RecordAnswer(m.key, FAILED, reason=f"{type(exc).__name__}: {exc}") for m in messages
        ]
    return [RecordAnswer(m.key, QUEUED) for m in messages]


def _answer(
    key: str,
    result: RegistrationResult | RegistrationFailed,
    batch: RegistrationBatch,
    request_id: str | None,
) -> RecordAnswer:
    if isinstance(result, RegistrationFailed):
        exc = result.error
        _log.error("registering %s failed; it will be retried", key, exc_info=exc)
        batch.failures.append((key, exc))
        return RecordAnswer(key, FAILED, reason=f"{type(exc).__name__}: {exc}")
    if result.outcome is Outcome.VANISHED:  # nothing in the ledger says so: the log does
        _log.warning(
            "manifest %s vanished: it was gone when registration read it; nothing recorded",
            key,
            extra={"registration": result.to_dict(), "request_id": request_id},
        )
    else:
        _log.info(
            "registered %s: %s",
            key,
            result.outcome.value,
            extra={"registration": result.to_dict(), "request_id": request_id},
        )
    if result.stream is not None and result.outcome in PER_STREAM_OUTCOMES:
        # Counted under service alone with the others (register_*): no total here.
        emit_for_stream(METRIC_PREFIX + result.outcome.value, result.stream, 1, total=False)
    return RecordAnswer(
        key, result.outcome.value, result.reason, result.snapshot_id, result.lsn, result.layout
    )


def _manifest_key(
    arrival: ObjectArrival, store_uri: str, layouts: Layouts[LayoutStrategy]
) -> tuple[str, Placed | Refused | str]:
    """The manifest key relative to the store root with its placement (any layout's, as
    ``layouts`` places it), or why the object is not one."""
    if not arrival.created:
        return arrival.key, "not an ObjectCreated event"
    key = key_in_store(store_uri, arrival.bucket, arrival.key)
    if key is None:
        return arrival.key, f"outside the object store root {store_uri}"
    placed = layouts.place(key)
    if isinstance(placed, Refused) and not placed.manifest:
        return key, placed.reason
    return key, placed  # a manifest refused by its key is recorded so by registration
