"""The producer-offsets registry through the functions, as the console sends it: the launch
function registers (events/launch-producer-offsets-register.json) and deletes
(events/launch-producer-offsets-delete.json), the query function reads
(events/query-producer-offsets.json); each bad field is one validation answer naming it."""

from __future__ import annotations

import copy
import importlib
import json
from datetime import timedelta
from pathlib import Path

import pytest

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
REGISTER = json.loads((EVENTS_DIR / "launch-producer-offsets-register.json").read_text())
DELETE = json.loads((EVENTS_DIR / "launch-producer-offsets-delete.json").read_text())
GET = json.loads((EVENTS_DIR / "query-producer-offsets.json").read_text())


@pytest.fixture
def launch_handler(powertools_env):
    return importlib.import_module("functions.launch").handler


def test_register_get_and_delete_as_the_console_sends_them(
    rt, launch_handler, query_handler, context
):
    created = launch_handler(REGISTER, context)
    assert created["ok"] is True, created
    assert (created["result"], created["replaced_expired"]) == ("CREATED", False)
    assert created["entry"]["offsets"] == REGISTER["offsets"]
    assert created["entry"]["expires_at"] == (
        rt.clock.now() + timedelta(days=1)
    ).isoformat().replace("+00:00", "Z")

    again = launch_handler(
        {**REGISTER, "offsets": [{"table_id": 3, "bucket": 0, "offset": 1}]}, context
    )
    assert again["result"] == "ALREADY_EXISTS"
    assert again["entry"]["offsets"] == REGISTER["offsets"]

    got = query_handler(GET, context)
    assert got["ok"] is True and got["found"] is True
    assert got["entry"]["offsets"] == REGISTER["offsets"]

    deleted = launch_handler(DELETE, context)
    assert (deleted["ok"], deleted["deleted"]) == (True, True)
    assert query_handler(GET, context)["found"] is False
    assert launch_handler(DELETE, context)["deleted"] is False


def test_an_expired_entry_is_gone_and_replaced(rt, launch_handler, query_handler, context):
    launch_handler({**REGISTER, "ttl_seconds": 60}, context)
    rt.clock.advance(timedelta(seconds=61))
    assert query_handler(GET, context)["found"] is False
    replaced = launch_handler(REGISTER, context)
    assert (replaced["result"], replaced["replaced_expired"]) == ("CREATED", True)


def _register_with(**changes: object) -> dict[str, object]:
    payload = copy.deepcopy(REGISTER)
    payload.update(changes)
    return payload


@pytest.mark.parametrize(
    ("payload", "field", "says"),
    [
        (_register_with(producer_id=""), "producer_id", "at least 1 character"),
        (_register_with(producer_id="x" * 129), "producer_id", "at most 128 characters"),
        (_register_with(producer_id="job/1"), "producer_id", "should match pattern"),
        (_register_with(offsets=[]), "offsets", "at least 1 item"),
        (
            _register_with(offsets=[{"table_id": 3, "bucket": 0, "offset": 1}] * 2049),
            "offsets",
            "at most 2048 items",
        ),
        (
            _register_with(offsets=[{"table_id": 3, "bucket": 0, "offset": 1}] * 2),
            "offsets",
            "bucket 0 of table 3 is listed twice",
        ),
        (
            _register_with(offsets=[{"table_id": 3, "bucket": 0, "offset": -1}]),
            "offsets[0].offset",
            "greater than or equal to 0",
        ),
        (
            _register_with(offsets=[{"table_id": 3, "bucket": 0}]),
            "offsets[0].offset",
            "required",
        ),
        (
            _register_with(offsets=[{"table_id": 3, "bucket": 0, "offset": "5"}]),
            "offsets[0].offset",
            "valid integer",
        ),
        (_register_with(ttl_seconds=0), "ttl_seconds", "greater than or equal to 1"),
        (_register_with(ttl_seconds=2_592_001), "ttl_seconds", "less than or equal to 2592000"),
        (_register_with(ttl_seconds="60"), "ttl_seconds", "valid integer"),
        (_register_with(ttl="60"), "ttl", "not a known field"),
    ],
)
def test_each_bad_field_is_named(rt, launch_handler, context, payload, field, says):
    answer = launch_handler(payload, context)
    assert answer["ok"] is False and answer["error"] == "validation", answer
    assert field in answer["message"] and says in answer["message"], answer["message"]


def test_a_bad_producer_id_in_a_query_is_named(rt, query_handler, context):
    answer = query_handler({**GET, "producer_id": "a b"}, context)
    assert answer["ok"] is False and "producer_id" in answer["message"], answer
