"""Register the manifests a delivery announces: every record answered, failures raised last.

Expected outcomes (``became_latest``, ``recorded``, ``duplicate``, ``fenced``,
``rejected``, ``conflict``) are answers, as are records that are no manifest
(``ignored``) or no S3 record at all (``invalid_record``). A record whose registration
fails unexpectedly does not stop the others: they are all processed, then the failure is
raised so that Lambda retries the asynchronous invoke (and, after its retries, sends the
event to the on-failure destination). Re-registering the records that did succeed is a
``duplicate``, so a retry is safe.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from snapledger.entrypoints.answers import Answer, MetricSink, count, ok
from snapledger.entrypoints.s3_events import Arrival, InvalidRecord, ObjectArrival, key_in_store
from snapledger.errors import SnapledgerError
from snapledger.layout import MANIFEST_NAME, SNAPSHOTS
from snapledger.runtime import Runtime
from snapledger.services.registration import register_manifest

IGNORED = "ignored"
INVALID_RECORD = "invalid_record"
FAILED = "failed"
#: Counters are ``Registration_{outcome}``, e.g. ``Registration_became_latest``.
METRIC_PREFIX = "Registration_"
MALFORMED_EVENT_METRIC = "Registration_malformed_event"

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecordAnswer:
    """What happened to one record of a delivery."""

    key: str | None
    outcome: str
    reason: str | None = None
    snapshot_id: str | None = None
    lsn: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class RecordsFailedError(SnapledgerError):
    """Some records failed unexpectedly (the rest were processed); raised to be retried."""

    def __init__(self, failures: Sequence[tuple[str, Exception]]) -> None:
        listed = "; ".join(f"{key}: {type(exc).__name__}: {exc}" for key, exc in failures)
        super().__init__(
            f"{len(failures)} record(s) failed and will be retried with the delivery (the "
            f"others are recorded, and are duplicates on retry): {listed}"
        )
        self.keys = [key for key, _ in failures]


@dataclass
class RegistrationBatch:
    """The answers of one delivery, and the unexpected failures among them."""

    records: list[RecordAnswer] = field(default_factory=list)
    failures: list[tuple[str, Exception]] = field(default_factory=list)

    def answer_or_raise(self) -> Answer:
        """The summary answer; RecordsFailedError (from the first cause) if any failed."""
        if self.failures:
            raise RecordsFailedError(self.failures) from self.failures[0][1]
        counts = Counter(record.outcome for record in self.records)
        return ok(records=[r.to_dict() for r in self.records], counts=dict(sorted(counts.items())))


def register_arrivals(
    arrivals: Sequence[Arrival], rt: Runtime, metrics: MetricSink
) -> RegistrationBatch:
    """Register every manifest among ``arrivals``, counting each outcome."""
    batch = RegistrationBatch()
    for arrival in arrivals:
        answer = _register_one(arrival, rt, batch)
        count(metrics, METRIC_PREFIX + answer.outcome)
        batch.records.append(answer)
    return batch


def _register_one(arrival: Arrival, rt: Runtime, batch: RegistrationBatch) -> RecordAnswer:
    if isinstance(arrival, InvalidRecord):
        problems = "; ".join(f"{p['field']}: {p['problem']}" for p in arrival.fields)
        _log.error("record %d is not an S3 record: %s", arrival.index, problems)
        return RecordAnswer(None, INVALID_RECORD, reason=problems)
    key, ignored = _manifest_key(arrival, rt.store.uri)
    if ignored:
        return RecordAnswer(key, IGNORED, reason=ignored)
    try:
        result = register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock)
    except Exception as exc:  # every record is processed; the failure is raised at the end
        _log.exception("registering %s failed; the delivery will be retried", key)
        batch.failures.append((key, exc))
        return RecordAnswer(key, FAILED, reason=f"{type(exc).__name__}: {exc}")
    _log.info(
        "registered %s: %s",
        key,
        result.outcome.value,
        extra={"registration": result.to_dict(), "s3_request_id": arrival.request_id},
    )
    return RecordAnswer(key, result.outcome.value, result.reason, result.snapshot_id, result.lsn)


def _manifest_key(arrival: ObjectArrival, store_uri: str) -> tuple[str, str | None]:
    """The manifest key relative to the store root, or why the object is not one."""
    if not arrival.created:
        return arrival.key, "not an ObjectCreated event"
    key = key_in_store(store_uri, arrival.bucket, arrival.key)
    if key is None:
        return arrival.key, f"outside the object store root {store_uri}"
    if not (key.startswith(f"{SNAPSHOTS}/") and key.endswith(f"/{MANIFEST_NAME}")):
        return key, f"not a snapshot manifest ({SNAPSHOTS}/.../{MANIFEST_NAME})"
    return key, None
