"""Issue 27 row 9 through the handlers: hostile console payloads and EventBridge events are
answered, never raised. A crafted cursor is "not a cursor this query gave", a launch event
without an id names ``id``, and any JSON (long strings, unicode, huge or negative numbers,
wrong types) sent to query, launch or gc (each of its actions, the Restate ones included)
gets an answer: ok, or a refusal naming the field."""

from __future__ import annotations

import base64
import importlib
import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapledger.entrypoints import gc
from snapledger.entrypoints.query import actions
from snapledger.runtime import runtime
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.restate_seed import STREAM as RESTATE_STREAM
from tests.functions.restate_seed import seed_restate
from tests.support import write_segments, write_snapshot

LINEAGE = {"stream": "orders", "partition": 3}
NOT_OURS = "not a cursor this query gave"
#: What a refusal may say; anything else (or an exception) is a crash.
REFUSALS = {"validation", "invalid_request", "not_found", "conflict"}
ULID = "01JW8Z3K9Q7N4M2P6R8T0V2X4Y"


@pytest.fixture
def launch_handler(powertools_env):
    return importlib.import_module("functions.launch").handler


@pytest.fixture
def gc_handler(powertools_env):
    return importlib.import_module("functions.gc").handler


@pytest.fixture
def seeded(rt):
    """orders/3 with snapshots at LSN 100..300 (100 is ``ULID``) and its changelog;
    orders/4 with one snapshot."""
    for lsn in (100, 200, 300):
        key = write_snapshot(rt.store, "orders", 3, lsn, snapshot_id=ULID if lsn == 100 else None)
        register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
        rt.clock.advance(timedelta(hours=1))
    key = write_snapshot(rt.store, "orders", 4, 100)
    register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY)
    write_segments(rt.store, "orders", 3, (0, 400))


def answered(handler, payload: object, context) -> dict[str, Any]:
    """The handler's answer to ``payload``: JSON, ok or a known refusal with a message."""
    answer = handler(payload, context)
    assert json.loads(json.dumps(answer)) == answer
    if answer["ok"] is not True:
        assert answer["error"] in REFUSALS, answer
        assert answer["message"]
    return answer


def b64(document: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode()


# --- (a) cursors -----------------------------------------------------------------------

CRAFTED = {
    "a DynamoDB key": b64({"pk": {"S": "LIN#orders#3"}, "sk": {"S": "SNAP#1"}}),
    "not a key": b64({"a": 1}),
    "a key of another shape": b64({"pk": {"N": "1"}}),
    "a list": b64([]),
    "deep nesting": base64.urlsafe_b64encode(b"[" * 3000).decode(),
    "not base64": "%%%",
    "100 KB": "A" * 100_000,
}


@pytest.mark.parametrize("action", ["list", "history", "jobs", "generations"])
@pytest.mark.parametrize("cursor", CRAFTED.values(), ids=CRAFTED.keys())
def test_a_crafted_cursor_is_answered_not_a_cursor_this_query_gave(
    seeded, query_handler, context, action, cursor
):
    payload: dict[str, Any] = {"action": action, "cursor": cursor}
    if action in ("list", "history"):
        payload.update(LINEAGE)
    if action == "generations":
        payload["stream"] = "orders"
    answer = answered(query_handler, payload, context)
    assert (answer["ok"], answer["error"]) == (False, "invalid_request")
    assert answer["message"].startswith("cursor: ") and NOT_OURS in answer["message"]


def test_another_lineages_cursor_is_refused(seeded, query_handler, context):
    # Given a real cursor of orders/3's listing
    page = answered(query_handler, {"action": "list", "limit": 1, **LINEAGE}, context)
    assert page["cursor"]
    # When it is sent with orders/4's listing, or with orders/3's history
    other = {"action": "list", "stream": "orders", "partition": 4, "cursor": page["cursor"]}
    history = {"action": "history", **LINEAGE, "cursor": page["cursor"]}
    # Then each is refused as not its cursor, and orders/3's listing goes on with it
    for payload in (other, history):
        answer = answered(query_handler, payload, context)
        assert answer["error"] == "invalid_request" and NOT_OURS in answer["message"]
    rest = answered(query_handler, {"action": "list", **LINEAGE, "cursor": page["cursor"]}, context)
    assert [s["lsn"] for s in rest["snapshots"]] == [200, 100]


# --- (b) EventBridge launches ------------------------------------------------------------


def restore_event(**fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": "RestoreRequested",
        "source": "snapledger",
        "account": "123456789012",
        "time": "2026-11-26T00:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"stream": "orders", "partition": 3},
    }
    event.update(fields)
    return event


@pytest.mark.parametrize(
    "event_id",
    [None, "", 12, ["a"], "x" * 100_000],
    ids=["absent", "empty", "number", "list", "100KB"],
)
def test_an_eventbridge_launch_without_a_usable_id_names_id(
    seeded, rt, launch_handler, context, event_id
):
    event = restore_event()
    if event_id is None:
        del event["id"]
    else:
        event["id"] = event_id
    answer = answered(launch_handler, event, context)
    assert (answer["ok"], answer["error"]) == (False, "validation")
    assert [f["field"] for f in answer["fields"]] == ["id"]
    assert "detail.request_id" in answer["message"]
    assert rt.jobs.list_jobs().items == []  # nothing started


def test_an_eventbridge_launch_without_id_but_with_a_request_id_starts_once(
    seeded, rt, launch_handler, context
):
    event = restore_event(detail={"stream": "orders", "partition": 3, "request_id": "r-1"})
    del event["id"]
    first = answered(launch_handler, event, context)
    again = answered(launch_handler, event, context)
    assert (first["ok"], first["created"], again["created"]) == (True, True, False)
    assert again["job_id"] == first["job_id"]
    assert len(rt.jobs.list_jobs().items) == 1


# --- numbers past their bounds ------------------------------------------------------------

HUGE = 10**40  # past DynamoDB's 38 digits: it raised decimal.Rounded in the serializer
PAST_BOUNDS = [
    (
        "launch",
        {"action": "snapshot_stream", "stream": "orders", "partitions": [HUGE]},
        "partitions[0]",
    ),
    (
        "launch",
        {"action": "snapshot_stream", "stream": "orders", "partitions": [10**9]},
        "partitions[0]",
    ),
    ("launch", {"action": "restore", "stream": "orders", "partition": HUGE}, "partition"),
    ("launch", {"action": "restore", "stream": "orders", "partitions": [3, HUGE]}, "partitions[1]"),
    (
        "launch",
        {"action": "restore", "stream": "orders", "from": {"generation": HUGE}},
        "from.FromGeneration.generation",
    ),
    ("query", {"action": "list", "stream": "orders", "partition": 2**63}, "partition"),
    ("query", {"action": "history", "stream": "orders", "partition": HUGE}, "partition"),
    ("query", {"action": "history", "stream": "orders", "after_seq": HUGE}, "after_seq"),
    ("query", {"action": "as_of", **LINEAGE, "lsn": 2**63}, "lsn"),
    ("query", {"action": "generation", "stream": "orders", "generation": HUGE}, "generation"),
]


@pytest.mark.parametrize(("handler", "payload", "field"), PAST_BOUNDS)
def test_a_number_past_its_bound_is_a_validation_answer_naming_it(
    seeded, query_handler, launch_handler, context, handler, payload, field
):
    answer = answered(query_handler if handler == "query" else launch_handler, payload, context)
    assert (answer["ok"], answer["error"]) == (False, "validation")
    assert field in [f["field"] for f in answer["fields"]]


# --- fuzz: any JSON, never an exception -------------------------------------------------

#: 100 KB of text (built, so that a report does not print it).
LONG = st.just(100_000).map(lambda n: "x" * n)
HOSTILE_STRINGS = LONG | st.sampled_from(
    [
        "",
        "orders",
        "ørders✓",
        "\ud800",
        "\x00",
        "latest",
        ULID,
        "2026-11-26T00:00:00Z",
        "9999-12-31T23:59:59+00:00",
    ]
)
HOSTILE_NUMBERS = st.sampled_from(
    [0, -1, 1, 3, 4, 100, 150, 2**31, 2**63 - 1, 2**63, 2**64, 10**38, 10**40, -(10**40), 1.5, -0.0]
) | st.floats(allow_nan=True, allow_infinity=True)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | HOSTILE_NUMBERS
    | st.text(max_size=20)
    | HOSTILE_STRINGS
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
VALUES = st.one_of(
    HOSTILE_NUMBERS,
    HOSTILE_STRINGS,
    st.lists(HOSTILE_NUMBERS, max_size=3),
    st.dictionaries(
        st.sampled_from(["3", "4", "-1", "x", "99999999999999999999999"]),
        HOSTILE_NUMBERS,
        max_size=2,
    ),
    JSON,
)
#: A payload each action answers ok: the fuzz changes one or two of its fields.
QUERIES: dict[str, dict[str, Any]] = {
    "latest": LINEAGE,
    "list": {**LINEAGE, "limit": 2},
    "history": {**LINEAGE, "after_seq": 1, "limit": 2},
    "as_of": {**LINEAGE, "lsn": 150},
    "snapshot": {**LINEAGE, "snapshot_id": ULID},
    "job": {"job_id": "restore-1"},
    "jobs": {"limit": 2},
    "generation": {"stream": "orders"},
    "generations": {"stream": "orders", "limit": 2},
    "producer_offsets": {"producer_id": "job-1"},
}
QUERY_FIELDS = [
    "action", "stream", "partition", "limit", "cursor", "after_seq", "lsn", "as_of_time",
    "snapshot_id", "job_id", "generation", "producer_id", "other",
]  # fmt: skip
LAUNCHES: dict[str, dict[str, Any]] = {
    "restore": {**LINEAGE, "from": {"lsn": 150}, "target_lsn": 300},
    "bootstrap": {"stream": "orders", "partitions": [3]},
    "compaction": {**LINEAGE},
    "snapshot_stream": {"stream": "orders", "partitions": [3, 4], "min_lsn": {"3": 100}},
    "producer_offsets_register": {
        "producer_id": "job-1",
        "offsets": [{"table_id": 3, "bucket": 0, "offset": 7}],
        "ttl_seconds": 60,
    },
    "producer_offsets_delete": {"producer_id": "job-1"},
}
LAUNCH_FIELDS = [
    "action", "stream", "partition", "partitions", "from", "target_lsn", "target_lsns",
    "request_id", "min_lsn", "deadline", "deadline_minutes", "by", "producer_id", "offsets",
    "ttl_seconds", "other",
]  # fmt: skip
FROMS = st.fixed_dictionaries(
    {}, optional={"snapshot_id": VALUES, "lsn": VALUES, "time": VALUES, "generation": VALUES}
)
DETAIL_TYPES = {
    "restore": "RestoreRequested",
    "bootstrap": "BootstrapRequested",
    "compaction": "CompactionRequested",
    "snapshot_stream": "SnapshotStreamRequested",
}


#: The gc function's actions (Restate ones on the stream tests/functions/restate_seed.py lays out).
GC_ACTIONS: dict[str, dict[str, Any]] = {
    "hold": {**LINEAGE, "snapshot_id": ULID, "reason": "audit", "by": "oncall"},
    "release": {**LINEAGE, "snapshot_id": ULID},
    "policy_get": {"stream": "orders"},
    "policy_set": {"stream": "orders", "min_count": 5},
    "policy_reset": {"stream": "orders", "by": "oncall"},
    "restate_heal": {"stream": RESTATE_STREAM},
    "restate_restore": {
        "stream": RESTATE_STREAM,
        "partition": 0,
        "snapshot_id": "snap_2000Test2000",
        "by": "oncall",
    },
}
GC_FIELDS = [
    "action", "stream", "partition", "snapshot_id", "expires_at", "reason", "by", "hold_id",
    "min_count", "min_age_hours", "max_count", "expected_version", "request_id", "dry_run",
    "other",
]  # fmt: skip
#: Fields an action takes besides those of its valid payload.
OPTIONAL = {
    "list": ["cursor"],
    "history": ["cursor"],
    "as_of": ["as_of_time"],
    "jobs": ["cursor"],
    "generation": ["generation"],
    "generations": ["cursor"],
    "restore": ["target_lsns", "request_id", "partitions"],
    "bootstrap": ["request_id", "partition"],
    "compaction": ["request_id", "from"],
    "snapshot_stream": ["deadline", "deadline_minutes", "by", "request_id"],
    "hold": ["expires_at", "hold_id"],
    "release": ["hold_id", "by"],
    "policy_set": ["min_age_hours", "max_count", "expected_version", "request_id", "by"],
    "policy_reset": ["expected_version", "request_id"],
    "restate_heal": ["partition", "after_partition", "dry_run"],
    "restate_restore": ["reason", "request_id"],
}


@st.composite
def changed(draw: st.DrawFn, valid: dict[str, dict[str, Any]], fields: list[str]) -> Any:
    """A payload that answers ok with one to three fields changed to hostile values, or
    removed (mostly fields its action takes); now and then any JSON at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    action = draw(st.sampled_from(sorted(valid)))
    payload = {"action": action, **valid[action]}
    own = [*valid[action], *OPTIONAL.get(action, [])]
    names = st.sampled_from(own) if draw(st.integers(0, 4)) else st.sampled_from(fields)
    for name in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
        if draw(st.booleans()) and name in payload:
            del payload[name]
        else:
            payload[name] = draw(FROMS if name == "from" and draw(st.booleans()) else VALUES)
    return payload


@st.composite
def eventbridge(draw: st.DrawFn) -> Any:
    """A launch as EventBridge delivers it, its detail changed as ``changed`` does, and
    its envelope's id, source or detail-type changed now and then."""
    detail = draw(changed(LAUNCHES, LAUNCH_FIELDS))
    action = detail.pop("action", "restore") if isinstance(detail, dict) else "restore"
    event: dict[str, Any] = {
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "source": "snapledger",
        "detail-type": DETAIL_TYPES.get(action, "RestoreRequested")
        if isinstance(action, str)
        else action,
        "detail": detail,
    }
    for name in draw(st.lists(st.sampled_from(["id", "source", "detail-type"]), max_size=2)):
        if draw(st.booleans()):
            event.pop(name, None)
        else:
            event[name] = draw(VALUES)
    return event


FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def test_every_query_action_has_a_valid_payload_to_change():
    assert set(QUERIES) == set(actions())


@FUZZ
@given(payload=changed(QUERIES, QUERY_FIELDS))
def test_any_query_payload_is_answered(seeded, query_handler, context, payload):
    answered(query_handler, payload, context)


@FUZZ
@given(payload=changed(LAUNCHES, LAUNCH_FIELDS))
def test_any_launch_payload_is_answered(seeded, launch_handler, context, payload):
    answered(launch_handler, payload, context)


@FUZZ
@given(event=eventbridge())
def test_any_eventbridge_launch_is_answered(seeded, launch_handler, context, event):
    answered(launch_handler, event, context)


def test_every_gc_action_has_a_valid_payload_to_change():
    assert set(GC_ACTIONS) == set(gc.actions())


@FUZZ
@given(payload=changed(GC_ACTIONS, GC_FIELDS))
def test_any_gc_payload_is_answered(seeded, rt, gc_handler, context, payload):
    if runtime().layouts.restate_for(RESTATE_STREAM) is None:  # once: examples share fixtures
        seed_restate(rt)
    answered(gc_handler, payload, context)
