"""A Restate snapshot is held, released and shown from the console by its own id
(``snap_...``), as a native one is by its ULID; anything else is refused naming the field."""

from __future__ import annotations

import importlib

import pytest

from tests.functions.restate_seed import STREAM, seed_restate


@pytest.fixture
def gc_handler(powertools_env):
    return importlib.import_module("functions.gc").handler


@pytest.fixture
def seeded(rt):
    return seed_restate(rt, partitions=(0,))


def test_a_restate_snapshot_is_held_shown_and_released_by_its_id(
    seeded, gc_handler, query_handler, context
):
    sid = seeded[0][0].location.snapshot_id
    lineage = {"stream": STREAM, "partition": 0, "snapshot_id": sid}
    held = gc_handler({"action": "hold", **lineage, "by": "ops", "reason": "audit"}, context)
    assert held["ok"] is True, held
    shown = query_handler({"action": "snapshot", **lineage}, context)
    assert shown["ok"] is True, shown
    assert shown["snapshot"]["snapshot_id"] == sid and shown["snapshot"]["format"] == "restate"
    assert [h["by"] for h in shown["snapshot"]["holds"]] == ["ops"]
    released = gc_handler({"action": "release", **lineage}, context)
    assert released["ok"] is True, released


@pytest.mark.parametrize("bad", ["snap_", "snap_has-dash", "SNAP_abc", "x" * 26])
def test_an_id_of_no_layout_is_refused_naming_the_field(seeded, gc_handler, context, bad):
    answer = gc_handler(
        {"action": "hold", "stream": STREAM, "partition": 0, "snapshot_id": bad}, context
    )
    assert answer["ok"] is False
    assert "snapshot_id" in str(answer)
