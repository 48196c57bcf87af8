"""The events Pipe's enrichment: DynamoDB Streams records of ``EV#`` items → domain events.

The Pipe hands over a batch of the ledger table's stream records (already filtered to
INSERTs of ``EV#`` items with a ``type``) and publishes each element of the returned list
as one event: ``detail`` = the element, ``detail-type`` = its ``type``.

A record whose event cannot be decoded (an unknown type, a missing or malformed field, an
image that is not DynamoDB JSON) becomes a ``LedgerEventUndecodable`` element naming its
key and the reason, in the record's place: raising instead would fail the whole batch, and
the Pipe would retry it and then drop all of it, the good events with the bad, into its
failure queue. The item itself stays in the ledger table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from snapledger.entrypoints.answers import field_problems
from snapledger.models.bus_events import LedgerEventUndecodable
from snapledger.models.events import LedgerEvent, StreamEvent

# Bound the reason so an item with many bad fields still fits in one EventBridge event.
MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class RecordFormat:
    """How the stream's records are read: an adapter's (functions/ledger_events.py wires
    ``snapledger.adapters.dynamodb_stream_records``)."""

    #: A record's event; a pydantic ValidationError if its item is not a valid event, a
    #: ValueError saying why if the record holds no item at all.
    event: Callable[[Any], LedgerEvent | StreamEvent]
    #: The ``type`` a record's item says it is, if any.
    event_type: Callable[[Any], str | None]
    #: The event published in a record's place, with whatever of its origin it has.
    undecodable: Callable[[Any, str], LedgerEventUndecodable]
    #: The event types this code publishes.
    known_event_types: frozenset[str]


@dataclass
class Published:
    """What the enrichment returns (``events``), and the records it could not decode."""

    events: list[dict[str, Any]] = field(default_factory=list)
    undecodable: list[LedgerEventUndecodable] = field(default_factory=list)


def publish_records(records: Iterable[Any], record_format: RecordFormat) -> Published:
    """One domain event per stream record, in the records' order."""
    published = Published()
    for record in records:
        try:
            published.events.append(domain_event(record, record_format))
        except UndecodableRecordError as exc:
            published.undecodable.append(exc.event)
            published.events.append(exc.event.model_dump(mode="json"))
    return published


class UndecodableRecordError(Exception):
    """A record with no readable event; ``event`` is what is published in its place."""

    def __init__(self, event: LedgerEventUndecodable) -> None:
        super().__init__(event.reason)
        self.event = event


def domain_event(record: Any, record_format: RecordFormat) -> dict[str, Any]:
    """The event of one stream record as the bus publishes it: its model's JSON."""
    try:
        event = record_format.event(record)
    except ValueError as exc:  # a pydantic ValidationError too
        raise _undecodable(record, record_format, exc) from exc
    return event.model_dump(mode="json")


def _validation_reason(event_type: str | None, known: frozenset[str], exc: ValidationError) -> str:
    if event_type not in known:
        return (
            f"unknown event type {event_type!r}: this code publishes "
            f"{', '.join(sorted(known))}. Deploy the version of snapledger that "
            "writes it (the enrichment runs the same code as the functions)"
        )
    problems = "; ".join(
        f"{p['field'].removeprefix(f'{event_type}.')}: {p['problem']}" for p in field_problems(exc)
    )
    return f"the {event_type} item is malformed: {problems}"


def _undecodable(
    record: Any, record_format: RecordFormat, exc: ValueError
) -> UndecodableRecordError:
    """The ``LedgerEventUndecodable`` of a record, in its place."""
    if isinstance(exc, ValidationError):
        known = record_format.known_event_types
        reason = _validation_reason(record_format.event_type(record), known, exc)
    else:
        reason = str(exc)
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return UndecodableRecordError(record_format.undecodable(record, reason))
