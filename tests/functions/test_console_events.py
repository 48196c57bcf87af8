"""Every ready console payload in events/query-*.json answers ok against a seeded lineage."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from snapledger.entrypoints.query import actions
from snapledger.models.producer_offsets import BucketOffset
from snapledger.models.requests import LaunchRequest
from snapledger.services import producer_offsets
from snapledger.services.generations import request_stream_snapshot
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_segments, write_snapshot

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
QUERY_EVENTS = sorted(EVENTS_DIR.glob("query-*.json"))
# The snapshot id events/query-snapshot.json names.
DOCUMENTED_ID = "01JW8Z3K9Q7N4M2P6R8T0V2X4Y"


@pytest.fixture
def seeded(rt):
    """orders/3 as the docs describe it: snapshots at LSN 100 (DOCUMENTED_ID), 200 and 300,
    the restore docs/console.md launches with request id ``example-restore-1``, and a
    retention policy set on the stream (its history), and generation 1 of the stream."""
    for lsn in (100, 200, 300):
        sid = DOCUMENTED_ID if lsn == 100 else None
        key = write_snapshot(rt.store, "orders", 3, lsn, snapshot_id=sid)
        register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
        rt.clock.advance(timedelta(hours=1))
    write_segments(rt.store, "orders", 3, (0, 300))
    request = LaunchRequest.model_validate(
        {"action": "restore", "stream": "orders", "partition": 3}
    )
    deps = LaunchDeps(
        ledger=rt.ledger, jobs=rt.jobs, runner=rt.runner, store=rt.store, clock=rt.clock
    )
    launch(request, request_id="example-restore-1", deps=deps)
    default = rt.gc.default_policy()
    set_policy(rt.streams, "orders", {"min_count": 5}, default=default, clock=rt.clock)
    # the producer events/query-producer-offsets.json reads
    offsets = [BucketOffset(table_id=3, bucket=0, offset=952)]
    producer_offsets.register(rt.producer_offsets, rt.clock, "flink-job-7f3a", offsets)
    # generation 1 of orders, completed by its one member (events/query-generation.json)
    request_stream_snapshot(rt.streams, "orders", [3], clock=rt.clock)
    key = write_snapshot(rt.store, "orders", 3, 300, generation=1)
    register_manifest(
        key,
        ledger=rt.ledger,
        store=rt.store,
        clock=rt.clock,
        streams=rt.streams,
        layouts=NATIVE_ONLY,
    )


def test_there_is_a_payload_for_every_query_action():
    asked = {json.loads(path.read_text())["action"] for path in QUERY_EVENTS}
    assert asked == set(actions())


@pytest.mark.parametrize("path", QUERY_EVENTS, ids=lambda p: p.stem)
def test_console_payload_answers_ok(seeded, query_handler, context, path):
    # Given a seeded lineage and a documented console payload
    payload = json.loads(path.read_text())
    # When it is sent to the query function as the console sends it
    answer = query_handler(payload, context)
    # Then it is answered, as JSON, with something found
    assert answer["ok"] is True, answer
    assert answer["action"] == payload["action"]
    assert json.loads(json.dumps(answer)) == answer
    assert any(value for key, value in answer.items() if key not in ("ok", "action", "cursor"))


def test_console_payloads_are_documented():
    text = (EVENTS_DIR.parent / "docs" / "console.md").read_text()
    for path in QUERY_EVENTS:
        assert f"events/{path.name}" in text, f"docs/console.md does not describe {path.name}"
