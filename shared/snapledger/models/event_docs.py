"""The parts of docs/events.md generated from the event models: ``make schema`` writes them.

A generated part sits between ``<!-- generated: {name} ... -->`` and
``<!-- end generated: {name} -->``; everything else in the file is written by hand. The
parts are rendered from the published schemas (``event_schema``), so the doc and the
schemas cannot disagree:

- ``event schemas``: one row per type, with its version, its log, its schema file and the
  names it was stored under before a rename;
- ``event fields``: one section per type, with its class docstring and a table of its own
  fields (the common ones are described once, by hand), each with its JSON type and its
  ``Field(description=...)``.

A new event type is documented by its docstring and its fields' descriptions.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from snapledger.models import event_evolution
from snapledger.models.bus_events import event_type_name, published_event_models
from snapledger.models.event_schema import SCHEMA_SUFFIX, event_json_schema, type_version
from snapledger.models.events import EventBase, StreamEventBase

SCHEMAS_PART = "event schemas"
FIELDS_PART = "event fields"
# The fields every event of a log carries, described by hand in docs/events.md.
_COMMON_FIELDS = frozenset(EventBase.model_fields) | frozenset(StreamEventBase.model_fields)


def _start_marker(name: str) -> str:
    return f"<!-- generated: {name} (make schema writes this part from the models) -->"


def _end_marker(name: str) -> str:
    return f"<!-- end generated: {name} -->"


def _log(model: type[BaseModel]) -> str:
    if issubclass(model, EventBase):
        return "lineage"
    if issubclass(model, StreamEventBase):
        return "stream"
    return "none"


def _markdown(text: str) -> str:
    """A docstring or description in Markdown: ``code`` is `code`, pipes escaped."""
    return re.sub(r"``(.+?)``", r"`\1`", text).replace("|", "\\|")


def _json_type(node: dict[str, Any]) -> str:
    """A property's schema (draft 4, as published) in a few words."""
    if "anyOf" in node:
        return " or ".join(_json_type(option) for option in node["anyOf"])
    if "$ref" in node:
        return f"object (`{node['$ref'].rsplit('/', 1)[-1]}`)"
    kind = node.get("type")
    if "enum" in node:
        *others, last = [f'`"{value}"`' for value in node["enum"]]
        return f"{', '.join(others)} or {last}" if others else last
    if kind == "array":
        return f"array of {_json_type(node['items'])}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"object (string → {_json_type(node['additionalProperties'])})"
    text = str(kind)
    if "format" in node:
        text += f" ({node['format']})"
    if "minimum" in node:
        text += f", ≥ {node['minimum']}"
    return text


def _own_fields(model: type[BaseModel]) -> list[str]:
    name = event_type_name(model)
    detail = event_json_schema(model)["definitions"][name]
    rows = [
        f"| `{field}` | {_json_type(node)} | {_markdown(node.get('description', ''))} |".replace(
            " |  |", " | |"
        )
        for field, node in detail["properties"].items()
        if field not in _COMMON_FIELDS and field != "type"
    ]
    if not rows:
        return ["No fields of its own."]
    return ["| field | type | meaning |", "|---|---|---|", *rows]


def _schema_link(name: str) -> str:
    return f"[{name}{SCHEMA_SUFFIX}](events/{name}{SCHEMA_SUFFIX})"


def _former_names(name: str) -> str:
    """The names a type's events were stored under by earlier releases, if it was renamed."""
    former = sorted(old for old, new in event_evolution.RENAMED_TYPES.items() if new == name)
    return ", ".join(f"`{old}`" for old in former)


def render_schemas_part() -> str:
    rows = [
        f"| `{event_type_name(m)}` | {_schema_link(event_type_name(m))} | {_log(m)} "
        f"| {type_version(m)} | {_former_names(event_type_name(m))} |"
        for m in published_event_models()
    ]
    header = ["| type | schema | log | version | formerly |", "|---|---|---|---|---|"]
    return "\n".join([*header, *rows])


def render_event_section(model: type[BaseModel]) -> str:
    """One type's section: its docstring, its own fields and its schema file."""
    name = event_type_name(model)
    lines = [f"### `{name}`", ""]
    doc = event_json_schema(model)["definitions"][name].get("description")
    if doc:
        lines += [_markdown(doc), ""]
    lines += [*_own_fields(model), "", f"Schema: {_schema_link(name)}."]
    return "\n".join(lines)


def render_fields_part() -> str:
    return "\n\n".join(render_event_section(model) for model in published_event_models())


def generated_parts() -> dict[str, str]:
    """``{part name: text}`` of every generated part of docs/events.md."""
    return {SCHEMAS_PART: render_schemas_part(), FIELDS_PART: render_fields_part()}


def with_generated_parts(doc: str) -> str:
    """``doc`` with each generated part replaced by what the models render now."""
    for name, text in generated_parts().items():
        start, end = _start_marker(name), _end_marker(name)
        if doc.count(start) != 1 or doc.count(end) != 1:
            raise ValueError(f"docs/events.md needs one {start!r} and one {end!r}")
        head, rest = doc.split(start)
        _, tail = rest.split(end)
        doc = f"{head}{start}\n\n{text}\n\n{end}{tail}"
    return doc
