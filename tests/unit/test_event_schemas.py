"""The published event schemas: generated from the models, committed, valid JSON Schema draft 4."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from snapledger.models.bus_events import event_type_name, published_event_models
from snapledger.models.event_schema import DRAFT4, SCHEMA_SUFFIX, draft4, event_json_schema
from snapledger.models.schema_export import EVENT_SCHEMA_DIR, event_schema_files
from tests.bus_events_support import (
    REPO,
    bus_event,
    example_event,
    published_schema,
    validator,
)

EVENT_TYPES = [event_type_name(model) for model in published_event_models()]


def test_committed_event_schemas_are_what_the_models_generate() -> None:
    # If this fails, run `make schema` and commit docs/events/.
    committed = {
        path.relative_to(REPO): path.read_text(encoding="utf-8")
        for path in (REPO / EVENT_SCHEMA_DIR).glob(f"*{SCHEMA_SUFFIX}")
    }
    assert committed == event_schema_files()


def test_every_published_type_has_one_schema_file() -> None:
    assert sorted(path.name for path in event_schema_files()) == sorted(
        f"{name}{SCHEMA_SUFFIX}" for name in EVENT_TYPES
    )
    assert "LedgerEventUndecodable" in EVENT_TYPES


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_each_schema_is_draft4_in_eventbridges_event_shape(event_type: str) -> None:
    schema = published_schema(event_type)
    validator(schema)  # checks the document against the draft 4 meta-schema
    assert schema["$schema"] == DRAFT4
    assert schema["x-amazon-events-source"] == "snapledger.ledger"
    assert schema["x-amazon-events-detail-type"] == event_type
    assert schema["properties"]["detail"] == {"$ref": f"#/definitions/{event_type}"}
    assert schema["properties"]["detail-type"]["enum"] == [event_type]
    # No keyword of a later draft slipped through
    text = str(schema)
    assert "$defs" not in text
    assert "'const'" not in text


@pytest.mark.parametrize("model", published_event_models()[:-1], ids=EVENT_TYPES[:-1])
def test_an_event_validates_and_a_broken_one_does_not(model: type[BaseModel]) -> None:
    event = example_event(model)
    name = event_type_name(model)
    check = validator(published_schema(name))
    good = bus_event(event.model_dump(mode="json"), detail_type=name, source="snapledger.ledger")
    assert list(check.iter_errors(good)) == []

    # Every field is required (model_dump writes each one, None as null) ...
    missing = {**good, "detail": {k: v for k, v in good["detail"].items() if k != "seq"}}
    assert not check.is_valid(missing)
    # ... the types are checked, formats included ...
    assert not check.is_valid({**good, "detail": {**good["detail"], "seq": "7"}})
    assert not check.is_valid({**good, "detail": {**good["detail"], "at": "yesterday"}})
    assert not check.is_valid({**good, "detail-type": "SomethingElse"})
    # ... and a field added by a later version does not break an older subscriber
    assert check.is_valid({**good, "detail": {**good["detail"], "added_later": 1}})


class _Nested(BaseModel):
    count: int = Field(gt=0, lt=10)


class _WithNested(BaseModel):
    type: Literal["WithNested"] = "WithNested"
    inner: _Nested
    maybe: _Nested | None = None


def test_draft4_translates_const_defs_and_exclusive_bounds() -> None:
    schema: dict[str, Any] = event_json_schema(_WithNested)
    definitions = schema["definitions"]
    assert definitions["WithNested"]["properties"]["type"]["enum"] == ["WithNested"]
    assert definitions["WithNested"]["properties"]["inner"] == {"$ref": "#/definitions/_Nested"}
    count = definitions["_Nested"]["properties"]["count"]
    assert (count["minimum"], count["exclusiveMinimum"]) == (0, True)
    assert (count["maximum"], count["exclusiveMaximum"]) == (10, True)
    assert definitions["WithNested"]["required"] == ["type", "inner", "maybe"]
    check = validator(schema)
    event = bus_event(
        {"type": "WithNested", "inner": {"count": 3}, "maybe": None},
        detail_type="WithNested",
        source="snapledger.ledger",
    )
    assert check.is_valid(event)
    assert not check.is_valid({**event, "detail": {**event["detail"], "inner": {"count": 0}}})


def test_draft4_refuses_a_keyword_it_cannot_translate() -> None:
    with pytest.raises(ValueError, match="'prefixItems' has no draft 4 form"):
        draft4({"type": "array", "prefixItems": [{"type": "integer"}]})
