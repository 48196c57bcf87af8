"""Test support for the events on the bus: example events, stream records, patterns, schemas.

Everything here is driven by the models and the published schemas, so an event type added
to the ``LedgerEvent`` union is exercised by the same tests with no change here.
"""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, FormatChecker
from pydantic import BaseModel, ValidationError

from snapledger.adapters import dynamodb_stream_records as records
from snapledger.adapters.dynamodb_codec import (
    KNOWN_STREAM_EVENT_TYPES,
    event_item,
    stream_event_item,
)
from snapledger.adapters.table_definition import PARTITION_KEY, SORT_KEY
from snapledger.entrypoints.ledger_events import RecordFormat
from snapledger.models.event_schema import SCHEMA_SUFFIX, event_json_schema
from snapledger.models.events import EVENT_ADAPTER, STREAM_EVENT_ADAPTER
from snapledger.models.schema_export import EVENT_SCHEMA_DIR

REPO = Path(__file__).resolve().parents[1]
SAMPLE_RECORD = Path(__file__).parent / "events" / "pipes-dynamodb-stream-insert.json"
EXAMPLE_TIME = "2026-11-23T10:15:30.123456Z"
# What EventBridge adds around the detail (account and region of the samples in tests/events).
#: How the enrichment reads the table stream's records: as functions/ledger_events.py wires it.
STREAM_RECORDS = RecordFormat(
    event=records.event_of,
    event_type=records.event_type_of,
    undecodable=records.undecodable_event,
    known_event_types=records.EVENT_TYPES,
)
ENVELOPE = {"version": "0", "account": "111122223333", "region": "us-west-2", "resources": []}

_FORMATS = FormatChecker()


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    # RFC 3339 as pydantic writes it: a date, a time and an offset (``Z`` or ``+hh:mm``).
    if not isinstance(value, str):
        return True
    return datetime.fromisoformat(value).tzinfo is not None


# --- example events --------------------------------------------------------------------------


def example_event(model: type[BaseModel], seq: int = 7) -> Any:
    """A valid event of ``model``, built from its published schema: every optional field
    filled where the model accepts that, else (a cross-field rule refused it) the defaults."""
    schema = event_json_schema(model)
    name = schema["title"]
    lineage = {"seq": seq, "stream": "orders", "partition": 3}
    refused: ValidationError | None = None
    for defaults in (False, True):
        body = _example(schema["definitions"][name], schema["definitions"], name, defaults)
        body |= {key: value for key, value in lineage.items() if key in body}
        try:
            adapter = STREAM_EVENT_ADAPTER if name in KNOWN_STREAM_EVENT_TYPES else EVENT_ADAPTER
            return adapter.validate_python(body)
        except ValidationError as exc:
            refused = exc
    raise AssertionError(f"no example of {name}: teach tests/bus_events_support.py\n{refused}")


def _example(node: dict[str, Any], definitions: dict[str, Any], field: str, defaults: bool) -> Any:
    if "$ref" in node:
        node = definitions[node["$ref"].rsplit("/", 1)[1]]
    if defaults and "default" in node:
        return node["default"]
    if "anyOf" in node:  # an optional field: its first non-null form
        option = next(o for o in node["anyOf"] if o.get("type") != "null")
        return _example(option, definitions, field, defaults)
    if "pattern" in node:
        raise NotImplementedError(f"{field}: give the example builder a value matching a pattern")
    if "enum" in node:
        return node["enum"][0]
    if node.get("type") in ("object", "array"):
        return _container(node, definitions, field, defaults)
    return _scalar(node, field)


def _container(
    node: dict[str, Any], definitions: dict[str, Any], field: str, defaults: bool
) -> Any:
    if node["type"] == "array":
        return [_example(node.get("items", {}), definitions, field, defaults)]
    if "properties" in node:
        properties = node["properties"].items()
        return {k: _example(v, definitions, k, defaults) for k, v in properties}
    return {"key": _example(node.get("additionalProperties", {}), definitions, field, defaults)}


def _scalar(node: dict[str, Any], field: str) -> Any:
    examples: dict[str, Any] = {
        "integer": max(int(node.get("minimum", 1)), 1) + 41,
        "number": 1.5,
        "boolean": True,
        "string": EXAMPLE_TIME if node.get("format") == "date-time" else f"{field}-example",
    }
    if node.get("type") not in examples:
        raise NotImplementedError(f"{field}: no example for the schema {node}")
    return examples[node["type"]]


# --- stream records ----------------------------------------------------------------------------


def stream_record(image: dict[str, Any], *, view_type: str, event_name: str = "INSERT") -> Any:
    """The AWS sample stream record carrying ``image`` (DynamoDB JSON) as its new item."""
    record = json.loads(SAMPLE_RECORD.read_text(encoding="utf-8"))
    keys = {name: image[name] for name in (PARTITION_KEY, SORT_KEY) if name in image}
    record["eventName"] = event_name
    record["eventID"] = uuid.uuid4().hex
    record["dynamodb"]["Keys"] = copy.deepcopy(keys)
    record["dynamodb"]["NewImage"] = copy.deepcopy(image)
    record["dynamodb"]["StreamViewType"] = view_type
    record["dynamodb"]["SizeBytes"] = len(json.dumps(image))
    return record


def event_record(event: Any, *, view_type: str) -> Any:
    """The stream record of an event the ledger appended, its item written by the real codec."""
    item = stream_event_item(event) if event.type in KNOWN_STREAM_EVENT_TYPES else event_item(event)
    return stream_record(item, view_type=view_type)


# --- EventBridge: patterns, paths, the envelope ------------------------------------------------


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether ``event`` matches an EventBridge event pattern.

    Implements what snapledger's patterns use: nested objects, lists of alternatives, exact
    values and the ``prefix`` and ``exists`` operators. Any other operator is an error, so a
    pattern this does not understand fails the test instead of passing it.
    """
    for key, expected in pattern.items():
        present = key in event
        value = event.get(key)
        if isinstance(expected, dict):
            if not matches(expected, value if isinstance(value, dict) else {}):
                return False
        elif not any(_matches_one(option, present, value) for option in expected):
            return False
    return True


def _matches_one(option: Any, present: bool, value: Any) -> bool:
    if not isinstance(option, dict):
        return present and value == option
    ((operator, argument),) = option.items()
    if operator == "exists":
        return present is argument
    if operator == "prefix":
        return present and isinstance(value, str) and value.startswith(argument)
    raise NotImplementedError(f"the pattern operator {operator!r} is not implemented here")


def json_path(path: str, document: Any) -> Any:
    """The value at a Pipes dynamic path parameter (``$.a.b``; dot notation only)."""
    if not path.startswith("$."):
        raise ValueError(f"not a dynamic path parameter: {path!r}")
    value = document
    for part in path[2:].split("."):
        if not part or any(c in part for c in "[]*"):
            raise NotImplementedError(f"path {path!r}: only dot notation is implemented here")
        value = value[part]
    return value


def bus_event(detail: dict[str, Any], *, detail_type: str, source: str) -> dict[str, Any]:
    """The event a subscriber receives: EventBridge's envelope around what the Pipe put."""
    return {
        **ENVELOPE,
        "id": str(uuid.uuid4()),
        "time": "2026-11-23T10:15:31Z",
        "detail-type": detail_type,
        "source": source,
        "detail": detail,
    }


# --- the published schemas ---------------------------------------------------------------------


def published_schema(event_type: str) -> dict[str, Any]:
    """The committed ``docs/events/{type}.schema.json``."""
    path = REPO / EVENT_SCHEMA_DIR / f"{event_type}{SCHEMA_SUFFIX}"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


def validator(schema: dict[str, Any]) -> Draft4Validator:
    """A draft 4 validator that also checks ``format: date-time``."""
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema, format_checker=_FORMATS)
