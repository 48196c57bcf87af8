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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from snapledger.adapters.dynamodb_codec import (
    KNOWN_EVENT_TYPES,
    KNOWN_STREAM_EVENT_TYPES,
    any_event_from_item,
    plain,
)
from snapledger.adapters.table_definition import PARTITION_KEY, SORT_KEY
from snapledger.entrypoints.answers import field_problems
from snapledger.models.bus_events import EVENT_TYPE_ATTRIBUTE, LedgerEventUndecodable

# Bound the reason so an item with many bad fields still fits in one EventBridge event.
MAX_REASON_CHARS = 2000
# What boto3's TypeDeserializer raises for an attribute value that is not DynamoDB JSON
# (decimal.InvalidOperation, for a number that is not one, is an ArithmeticError).
_NOT_DYNAMODB_JSON = (TypeError, ValueError, KeyError, AttributeError, ArithmeticError)


@dataclass
class Published:
    """What the enrichment returns (``events``), and the records it could not decode."""

    events: list[dict[str, Any]] = field(default_factory=list)
    undecodable: list[LedgerEventUndecodable] = field(default_factory=list)


def publish_records(records: Iterable[Any]) -> Published:
    """One domain event per stream record, in the records' order."""
    published = Published()
    for record in records:
        try:
            published.events.append(domain_event(record))
        except UndecodableRecordError as exc:
            published.undecodable.append(exc.event)
            published.events.append(exc.event.model_dump(mode="json"))
    return published


class UndecodableRecordError(Exception):
    """A record with no readable event; ``event`` is what is published in its place."""

    def __init__(self, event: LedgerEventUndecodable) -> None:
        super().__init__(event.reason)
        self.event = event


def domain_event(record: Any) -> dict[str, Any]:
    """The event of one stream record as the bus publishes it: its model's JSON."""
    image = _mapping(_mapping(record).get("dynamodb")).get("NewImage")
    if not isinstance(image, Mapping):
        raise _undecodable(
            record,
            "the stream record has no dynamodb.NewImage: the table's stream must carry new "
            "images (StreamViewType NEW_IMAGE or NEW_AND_OLD_IMAGES)",
        )
    try:
        event = any_event_from_item(dict(image))
    except ValidationError as exc:
        raise _undecodable(record, _validation_reason(image, exc)) from exc
    except _NOT_DYNAMODB_JSON as exc:
        raise _undecodable(record, _not_dynamodb_json_reason(image)) from exc
    return event.model_dump(mode="json")


def _not_dynamodb_json_reason(image: Mapping[str, Any]) -> str:
    for name, value in image.items():
        try:
            plain({name: value})
        except _NOT_DYNAMODB_JSON as exc:
            return (
                f"the item's attribute {name!r} is not DynamoDB JSON ({value!r}: "
                f"{type(exc).__name__})"
            )
    return "the item is not DynamoDB JSON"  # pragma: no cover - some attribute failed


def _validation_reason(image: Mapping[str, Any], exc: ValidationError) -> str:
    event_type = _string_attribute(image, EVENT_TYPE_ATTRIBUTE)
    known = KNOWN_EVENT_TYPES | KNOWN_STREAM_EVENT_TYPES
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


def _undecodable(record: Any, reason: str) -> UndecodableRecordError:
    """The ``LedgerEventUndecodable`` of a record: whatever of its key and origin it has."""
    record = _mapping(record)
    stream = _mapping(record.get("dynamodb"))
    keys, image = _mapping(stream.get("Keys")), _mapping(stream.get("NewImage"))
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return UndecodableRecordError(
        LedgerEventUndecodable(
            pk=_string_attribute(keys, PARTITION_KEY),
            sk=_string_attribute(keys, SORT_KEY),
            event_type=_string_attribute(image, EVENT_TYPE_ATTRIBUTE),
            reason=reason,
            stream_event_id=_string(record.get("eventID")),
            stream_sequence_number=_string(stream.get("SequenceNumber")),
            event_source_arn=_string(record.get("eventSourceARN")),
        )
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _string_attribute(item: Mapping[str, Any], name: str) -> str | None:
    """The value of a DynamoDB JSON string attribute (``{"S": ...}``), else None."""
    return _string(_mapping(item.get(name)).get("S"))
