"""The ledger table's DynamoDB Streams records, as the events Pipe hands them over.

A record's ``dynamodb.NewImage`` is an ``EV#`` item in DynamoDB JSON; its ``Keys`` and the
record's ``eventID``, ``SequenceNumber`` and ``eventSourceARN`` say where it came from.
The enrichment (``snapledger.entrypoints.ledger_events``) is given these functions to read
them (functions/ledger_events.py wires them): it knows nothing of DynamoDB itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from snapledger.adapters.dynamodb_codec import (
    KNOWN_EVENT_TYPES,
    KNOWN_STREAM_EVENT_TYPES,
    any_event_from_item,
    plain,
)
from snapledger.adapters.table_definition import PARTITION_KEY, SORT_KEY
from snapledger.models.bus_events import EVENT_TYPE_ATTRIBUTE, LedgerEventUndecodable
from snapledger.models.event_evolution import current_type_name
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.upcasting import EventVersionError

# What boto3's TypeDeserializer raises for an attribute value that is not DynamoDB JSON
# (decimal.InvalidOperation, for a number that is not one, is an ArithmeticError).
_NOT_DYNAMODB_JSON = (TypeError, ValueError, KeyError, AttributeError, ArithmeticError)
#: Every event type an ``EV#`` item of either log may hold.
EVENT_TYPES = KNOWN_EVENT_TYPES | KNOWN_STREAM_EVENT_TYPES


def event_of(record: Any) -> LedgerEvent | StreamEvent:
    """The event of one stream record: a pydantic ValidationError if its item is not a
    valid event, a ValueError saying why if the record holds no DynamoDB JSON item."""
    image = _mapping(_mapping(record).get("dynamodb")).get("NewImage")
    if not isinstance(image, Mapping):
        raise ValueError(
            "the stream record has no dynamodb.NewImage: the table's stream must carry new "
            "images (StreamViewType NEW_IMAGE or NEW_AND_OLD_IMAGES)"
        )
    try:
        return any_event_from_item(dict(image))
    except ValidationError:
        raise  # DynamoDB JSON, but not a valid event: the caller says which fields
    except EventVersionError as exc:
        raise ValueError(str(exc)) from exc  # a version this code cannot read: it says why
    except _NOT_DYNAMODB_JSON as exc:
        raise ValueError(_not_dynamodb_json_reason(image)) from exc


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


def event_type_of(record: Any) -> str | None:
    """The type the record's item reads as, if its ``type`` is a string: a renamed type's
    current name (``models/event_evolution.py``), which the bus publishes it under."""
    image = _mapping(_mapping(_mapping(record).get("dynamodb")).get("NewImage"))
    stored = _string_attribute(image, EVENT_TYPE_ATTRIBUTE)
    return None if stored is None else current_type_name(stored)


def undecodable_event(record: Any, reason: str) -> LedgerEventUndecodable:
    """The event published in the record's place: whatever of its key and origin it has."""
    record = _mapping(record)
    stream = _mapping(record.get("dynamodb"))
    return LedgerEventUndecodable(
        pk=_string_attribute(_mapping(stream.get("Keys")), PARTITION_KEY),
        sk=_string_attribute(_mapping(stream.get("Keys")), SORT_KEY),
        event_type=event_type_of(record),
        reason=reason,
        stream_event_id=_string(record.get("eventID")),
        stream_sequence_number=_string(stream.get("SequenceNumber")),
        event_source_arn=_string(record.get("eventSourceARN")),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _string_attribute(item: Mapping[str, Any], name: str) -> str | None:
    """The value of a DynamoDB JSON string attribute (``{"S": ...}``), else None."""
    return _string(_mapping(item.get(name)).get("S"))
