"""docs/events.md says what subscribers receive: its example, patterns and tables hold, and
its generated parts (the types, their fields, their schemas) are what the models render."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from snapledger.adapters.dynamodb_codec import KNOWN_STREAM_EVENT_TYPES
from snapledger.models.bus_events import (
    LEDGER_EVENT_SOURCE,
    event_type_name,
    ledger_event_models,
    published_event_models,
)
from snapledger.models.event_docs import render_event_section, with_generated_parts
from snapledger.models.events import EVENT_ADAPTER, EventBase, StreamEventBase, TrimPointAdvanced
from snapledger.models.schema_export import EVENT_SCHEMA_DIR
from tests.bus_events_support import (
    REPO,
    bus_event,
    example_event,
    matches,
    published_schema,
    validator,
)

DOC = (REPO / "docs" / "events.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"{title}\n")
    level = title.split(" ", 1)[0]
    rest = DOC[start + len(title) + 1 :]
    end = re.search(rf"^{level} ", rest, flags=re.MULTILINE)
    return rest[: end.start()] if end else rest


def _json_blocks(text: str) -> list[Any]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]


def _published(event: Any) -> dict[str, Any]:
    name = event.type
    return bus_event(event.model_dump(mode="json"), detail_type=name, source=LEDGER_EVENT_SOURCE)


def test_the_example_is_a_valid_event_exactly_as_the_model_writes_it() -> None:
    (example,) = _json_blocks(_section("### Example"))
    errors = list(validator(published_schema(example["detail-type"])).iter_errors(example))
    assert errors == []
    event = EVENT_ADAPTER.validate_python(example["detail"])
    assert event.model_dump(mode="json") == example["detail"]
    assert example["source"] == LEDGER_EVENT_SOURCE


def test_every_detail_has_the_common_fields_the_doc_lists() -> None:
    table = _section("## What a subscriber receives").split("### Example")[0]
    listed = set(re.findall(r"^\| `([a-z_]+)`(?:, `([a-z_]+)`)? \|", table, re.MULTILINE))
    common = {name for pair in listed for name in pair if name} - {"source", "time"}
    common -= {"detail-type", "detail"}
    assert common == {"type", "stream", "partition", "seq", "at", "command_id"}
    for model in ledger_event_models():
        name = event_type_name(model)
        detail = published_schema(name)["definitions"][name]
        # a stream's own events belong to no partition, as the doc says
        expected = common - {"partition"} if name in KNOWN_STREAM_EVENT_TYPES else common
        assert expected <= set(detail["required"]), name
        if name in KNOWN_STREAM_EVENT_TYPES:
            assert "partition" not in detail["properties"], name
            # the table the common fields point at marks it as a stream's own event
            assert f"| `{name}` | [{name}.schema.json](events/{name}.schema.json) | stream |" in DOC


def test_the_subscription_patterns_match_what_they_say() -> None:
    section = _section("## Subscribing")
    trim_points, everything = _json_blocks(section)
    orders = example_event(TrimPointAdvanced)
    assert orders.stream == "orders"
    payments = orders.model_copy(update={"stream": "payments"})
    assert matches(trim_points, _published(orders))
    assert not matches(trim_points, _published(payments))
    others = [example_event(m) for m in ledger_event_models() if m is not TrimPointAdvanced]
    assert not any(matches(trim_points, _published(e)) for e in others)
    assert all(matches(everything, _published(e)) for e in [orders, *others])
    # The CLI example creates the first rule
    (cli_pattern,) = re.findall(r"--event-pattern '(.*?)'", section)
    assert json.loads(cli_pattern) == trim_points


@pytest.mark.parametrize("model", published_event_models(), ids=event_type_name)
def test_the_schema_table_links_every_type(model: type) -> None:
    name = event_type_name(model)
    row = f"| `{name}` | [{name}.schema.json](events/{name}.schema.json) |"
    assert row in DOC
    assert (REPO / EVENT_SCHEMA_DIR / f"{name}.schema.json").is_file()


def test_the_generated_parts_are_what_the_models_render() -> None:
    # If this fails, run `make schema` and commit docs/events.md.
    assert with_generated_parts(DOC) == DOC


def test_a_generated_part_is_only_replaced_between_its_markers() -> None:
    outside = "hand-written\n"
    rendered = with_generated_parts(DOC.replace("## Event types\n", f"## Event types\n{outside}"))
    assert f"## Event types\n{outside}" in rendered
    with pytest.raises(ValueError, match="event fields"):
        with_generated_parts(DOC.replace("<!-- end generated: event fields -->", ""))


@pytest.mark.parametrize("model", published_event_models(), ids=event_type_name)
def test_each_type_is_documented_with_its_own_fields(model: type[BaseModel]) -> None:
    name = event_type_name(model)
    section = _section(f"### `{name}`")
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    common = set(EventBase.model_fields) | set(StreamEventBase.model_fields)
    # the doc lists each field by its JSON name (StreamSnapshotMemberCounted: member)
    json_names = {field.alias or name for name, field in model.model_fields.items()}
    assert listed == json_names - common - {"type"}


def test_a_new_type_is_documented_by_its_docstring_and_field_descriptions() -> None:
    class NoteTaken(EventBase):
        """A note was taken about the lineage: ``text`` says what."""

        type: Literal["NoteTaken"] = "NoteTaken"
        text: str = Field(description="What the note | says")
        kind: Literal["info", "warning", "fault"]
        count: int | None = Field(default=None, ge=0)

    section = render_event_section(NoteTaken)
    assert section.startswith(
        "### `NoteTaken`\n\nA note was taken about the lineage: `text` says what.\n"
    )
    assert "| `text` | string | What the note \\| says |" in section
    assert '| `kind` | `"info"`, `"warning"` or `"fault"` | |' in section
    assert "| `count` | integer, ≥ 0 or null | |" in section
    assert "`seq`" not in section and "`partition`" not in section
    assert section.endswith("Schema: [NoteTaken.schema.json](events/NoteTaken.schema.json).")


def test_the_undecodable_section_points_at_its_fields() -> None:
    assert "(#ledgereventundecodable)" in _section("### A record that cannot be decoded")
