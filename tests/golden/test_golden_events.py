"""Every event any earlier release wrote reads in this one (DESIGN invariant 16).

Each folder under tests/golden is one release's set (``make_fixtures.py``): one stored
``EV#`` item of every event type, as that release's codec wrote it. Each is read back
through the decode path the functions and the events Pipe use and must give exactly the
event that release published, passed through the upcasters this release declares for its
stored version (``models/upcasting.py``): nothing else may change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters.dynamodb_codec import (
    any_event_from_item,
    event_item,
    stored_event_version,
    stream_event_item,
)
from snapledger.models.bus_events import event_type_name, ledger_event_models
from snapledger.models.events import StreamEventBase
from snapledger.models.upcasting import CURRENT_VERSIONS, upcast

GOLDEN_DIR = Path(__file__).resolve().parent
SETS = sorted(path for path in GOLDEN_DIR.iterdir() if path.is_dir() and path.name[0].isdigit())
FIXTURES = sorted(path for folder in SETS for path in folder.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_the_newest_set_has_a_fixture_of_every_event_type() -> None:
    # Given the event types this release writes, and the newest release's set
    types = {event_type_name(model) for model in ledger_event_models()}
    newest = SETS[-1]
    # Then each type has a stored item there (a type added since: make a new set)
    held = {path.stem for path in newest.glob("*.json")}
    assert types - held == set(), f"{newest.name} has no fixture of these types"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_stored_item_of_an_earlier_release_reads_as_the_event_it_published(
    path: Path,
) -> None:
    # Given an EV# item as an earlier release stored it
    fixture = _load(path)
    # When this release reads it
    event = any_event_from_item(fixture["item"])
    # Then it is the event that release published, as this release's upcasters say
    assert event.type == fixture["type"] == path.stem
    published = upcast(fixture["event"], stored_event_version(fixture["item"]))
    read = event.model_dump(mode="json")
    # (a field added since, optional, reads at its default: an additive change needs no
    # upcaster, and the stored item is unchanged — the next test)
    added = {name: value for name, value in read.items() if name not in published}
    assert added == _defaults(type(event), added)
    assert {name: value for name, value in read.items() if name in published} == published


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_type_still_at_its_stored_version_is_written_as_that_release_wrote_it(
    path: Path,
) -> None:
    # Given a stored item of a type whose version has not changed since
    fixture = _load(path)
    if CURRENT_VERSIONS[fixture["type"]] != stored_event_version(fixture["item"]):
        pytest.skip(f"{fixture['type']} has a newer version: its upcaster says what changed")
    # When this release writes the same event again
    event = any_event_from_item(fixture["item"])
    item = stream_event_item(event) if isinstance(event, StreamEventBase) else event_item(event)
    # Then the item is the one stored, attribute for attribute (the TTL aside: no window here)
    assert item == {k: v for k, v in fixture["item"].items() if k != "ttl"}


def _defaults(model: Any, names: dict[str, Any]) -> dict[str, Any]:
    """Each named field's default (a required field has none, so it cannot match)."""
    fields = model.model_fields
    return {
        name: "<required: no default>"
        if fields[name].is_required()
        else fields[name].get_default(call_default_factory=True)
        for name in names
    }
