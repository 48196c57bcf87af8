"""JSON Schemas of the events on the snapledger bus, generated from the models.

One document per event type (``docs/events/{type}.schema.json``, ``make schema``; the stack
deploys the same documents to an EventBridge schema registry). Each describes the whole
EventBridge event as a subscriber receives it, in the shape EventBridge's own schemas have,
so the registry can generate code bindings from it: the envelope (``version``, ``id``,
``detail-type``, ``source``, ``account``, ``time``, ``region``, ``resources``) with
``detail`` pointing at the event model under ``definitions``.

The format is JSON Schema draft 4, the JSON Schema draft EventBridge accepts
(``JSONSchemaDraft4``); pydantic writes draft 2020-12, and ``draft4`` translates the few
keywords that differ and refuses any it cannot translate, so a model change that needs a
newer keyword fails ``make schema`` instead of publishing a wrong document.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from snapledger.models.bus_events import (
    LEDGER_EVENT_SOURCE,
    event_type_name,
    published_event_models,
)

DRAFT4 = "http://json-schema.org/draft-04/schema#"
SCHEMA_SUFFIX = ".schema.json"
# Keywords of later drafts with no draft 4 equivalent that pydantic may write.
_NO_DRAFT4_FORM = frozenset(
    {
        "prefixItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "dependentRequired",
        "dependentSchemas",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "$anchor",
        "$dynamicRef",
    }
)
# Keywords whose value maps names to schemas (the names are not keywords).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions"})


def type_version(model: type[BaseModel]) -> int:
    """The version of an event type's form (``schema_version``; 1 for a type without one,
    such as ``LedgerEventUndecodable``): the bus publishes every event in this form."""
    version = getattr(model, "schema_version", 1)
    return version if isinstance(version, int) else 1


def event_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The draft 4 schema of one event type as EventBridge delivers it; its description
    names the type's version."""
    name = event_type_name(model)
    detail = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
    definitions = {key: draft4(value) for key, value in detail.pop("$defs", {}).items()}
    definitions[name] = draft4(detail)
    return {
        "$schema": DRAFT4,
        "title": name,
        "description": (
            f"A {name} event on the snapledger bus: source {LEDGER_EVENT_SOURCE}, "
            f"detail-type {name}, detail the event (docs/events.md). Version "
            f"{type_version(model)} of {name}: every {name} event is published in this form."
        ),
        "type": "object",
        "x-amazon-events-source": LEDGER_EVENT_SOURCE,
        "x-amazon-events-detail-type": name,
        "required": [
            "version",
            "id",
            "detail-type",
            "source",
            "account",
            "time",
            "region",
            "resources",
            "detail",
        ],
        "properties": {
            "version": {"type": "string"},
            "id": {"type": "string"},
            "detail-type": {"type": "string", "enum": [name]},
            "source": {"type": "string", "enum": [LEDGER_EVENT_SOURCE]},
            "account": {"type": "string"},
            "time": {"type": "string", "format": "date-time"},
            "region": {"type": "string"},
            "resources": {"type": "array", "items": {"type": "string"}},
            "detail": {"$ref": f"#/definitions/{name}"},
        },
        "definitions": definitions,
    }


def draft4(node: Any) -> Any:
    """A pydantic (2020-12) schema node in draft 4 terms.

    ``const`` becomes a one-value ``enum``; ``$defs`` references point at ``definitions``;
    numeric ``exclusiveMinimum``/``exclusiveMaximum`` become the boolean form. Every
    property an object lists is required, because ``model_dump(mode="json")`` writes every
    field (None as null). ``additionalProperties: false`` is dropped: fields are only ever
    added to an event type, and a subscriber holding an older schema must still accept it.
    """
    if isinstance(node, list):
        return [draft4(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NO_DRAFT4_FORM:
            raise ValueError(
                f"the JSON Schema keyword {key!r} has no draft 4 form: change the model, or "
                "teach snapledger.models.event_schema.draft4 to translate it"
            )
        if key in _SCHEMA_MAPS:
            out[key] = {name: draft4(schema) for name, schema in value.items()}
        elif key == "const":
            out["enum"] = [value]
        elif key == "$ref":
            out[key] = value.replace("#/$defs/", "#/definitions/")
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out[key.removeprefix("exclusive").lower()] = value
            out[key] = True
        elif key == "additionalProperties" and value is False:
            continue
        else:
            out[key] = draft4(value)
    if "properties" in out:
        out["required"] = list(out["properties"])
    return out


def render(schema: dict[str, Any]) -> str:
    """The published text of a schema (stable: sorted keys, two-space indent)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def event_schema_documents() -> dict[str, str]:
    """``{event type: published text}`` for every type the bus carries, in union order."""
    return {
        event_type_name(model): render(event_json_schema(model))
        for model in published_event_models()
    }
