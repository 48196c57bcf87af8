"""The query function: every action, its refusals, and malformed console payloads."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from snapledger.services.policies import reset_policy, set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.support import emitted_metrics, item_count
from tests.support import write_snapshot

LINEAGE = {"stream": "orders", "partition": 3}
# The id events/query-snapshot.json asks for.
KNOWN_ID = "01JW8Z3K9Q7N4M2P6R8T0V2X4Y"


@pytest.fixture
def seeded(rt):
    """orders/3: snapshots at LSN 100 (KNOWN_ID), 200, 300 an hour apart, one rejected at 400."""
    ids = {}
    for lsn in (100, 200, 300):
        sid = KNOWN_ID if lsn == 100 else None
        key = write_snapshot(rt.store, lsn=lsn, snapshot_id=sid)
        result = register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
        ids[lsn] = result.snapshot_id
        rt.clock.advance(timedelta(hours=1))
    bad = write_snapshot(rt.store, lsn=400, manifest=b"[]")
    register_manifest(bad, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY)
    return ids


def ask(query_handler, context, **payload):
    answer = query_handler(payload, context)
    json.dumps(answer)  # every answer is JSON as it is, datetimes included
    return answer


def test_latest_answers_the_head(seeded, query_handler, context, capsys):
    # Given a lineage whose newest valid snapshot is at LSN 300
    # When the console asks for its latest
    answer = ask(query_handler, context, action="latest", **LINEAGE)
    # Then the answer is the HEAD, with the pointer on LSN 300
    assert answer["ok"] is True
    assert answer["action"] == "latest"
    assert (answer["head"]["latest_lsn"], answer["head"]["latest_snapshot_id"]) == (
        300,
        seeded[300],
    )
    assert emitted_metrics(capsys.readouterr().out)["Query_latest"] == 1


def test_list_pages_through_the_snapshots_newest_first(seeded, query_handler, context):
    # Given four snapshot records
    # When the console lists them two at a time, passing the cursor back
    first = ask(query_handler, context, action="list", limit=2, **LINEAGE)
    second = ask(query_handler, context, action="list", limit=2, cursor=first["cursor"], **LINEAGE)
    # Then it sees every one, newest first, with registry times as ISO-8601 strings
    lsns = [s["lsn"] for s in first["snapshots"] + second["snapshots"]]
    assert lsns == [400, 300, 200, 100]
    assert first["snapshots"][0]["status"] == "REJECTED"
    assert second["snapshots"][-1]["registered_at"] == "2026-01-01T00:00:00Z"


def test_history_answers_the_events_in_order(seeded, query_handler, context):
    # Given the events of three registrations and one rejection
    # When the console asks for the history after the second event
    answer = ask(query_handler, context, action="history", after_seq=2, **LINEAGE)
    # Then it gets the rest, in order
    assert [e["seq"] for e in answer["events"]] == [3, 4, 5, 6, 7]
    assert answer["events"][0]["type"] == "SnapshotRegistered"
    assert answer["events"][-1]["type"] == "SnapshotRejected"
    assert answer["cursor"] is None


def test_history_without_a_partition_answers_the_streams_policy_changes(
    seeded, rt, query_handler, context
):
    # Given a policy set, changed and reset on the stream
    default = rt.gc.default_policy()
    for changes in ({"min_count": 5}, {"max_count": 9}):
        set_policy(rt.streams, "orders", changes, default=default, clock=rt.clock, by="ann")
    reset_policy(rt.streams, "orders", default=default, clock=rt.clock, by="bob")
    # When the console asks for the stream's history (no partition)
    answer = ask(query_handler, context, action="history", stream="orders")
    # Then it gets the three changes in order, each with who and what
    assert answer["ok"] is True and answer["cursor"] is None
    events = answer["events"]
    assert [(e["seq"], e["type"], e["by"]) for e in events] == [
        (1, "PolicySet", "ann"),
        (2, "PolicySet", "ann"),
        (3, "PolicyReset", "bob"),
    ]
    assert events[1]["changed"] == ["max_count"] and events[1]["policy"]["max_count"] == 9
    assert events[2]["previous_policy"]["min_count"] == 5 and "partition" not in events[0]
    # and paging works as for a lineage
    later = ask(query_handler, context, action="history", stream="orders", after_seq=2)
    assert [e["seq"] for e in later["events"]] == [3]
    # and the lineage's own history has none of them (the policy is the stream's)
    lineage = ask(query_handler, context, action="history", **LINEAGE)
    assert not {e["type"] for e in lineage["events"]} & {"PolicySet", "PolicyReset"}
    # and a stream that never changed its policy has an empty history
    assert ask(query_handler, context, action="history", stream="payments")["events"] == []


def test_as_of_an_lsn_and_as_of_a_time(seeded, query_handler, context):
    # Given snapshots at 100, 200, 300 registered at 00:00, 01:00, 02:00
    # When the console asks as of LSN 250, and as of 01:30
    by_lsn = ask(query_handler, context, action="as_of", lsn=250, **LINEAGE)
    by_time = ask(
        query_handler, context, action="as_of", as_of_time="2026-01-01T01:30:00+00:00", **LINEAGE
    )
    # Then both resolve to the snapshot at 200
    assert by_lsn["snapshot"]["snapshot_id"] == seeded[200]
    assert by_time["snapshot"]["snapshot_id"] == seeded[200]


def test_snapshot_by_id(seeded, query_handler, context):
    answer = ask(query_handler, context, action="snapshot", snapshot_id=KNOWN_ID, **LINEAGE)
    assert (answer["snapshot"]["lsn"], answer["snapshot"]["status"]) == (100, "REGISTERED")


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"action": "latest", "stream": "nobody", "partition": 0}, id="no-lineage"),
        pytest.param({"action": "as_of", "lsn": 50, **LINEAGE}, id="before-first-snapshot"),
        pytest.param(
            {"action": "snapshot", "snapshot_id": "01JW8Z3K9Q7N4M2P6R8T0V2X4Z", **LINEAGE},
            id="unknown-id",
        ),
    ],
)
def test_what_does_not_exist_is_answered_not_found(seeded, query_handler, context, payload):
    answer = ask(query_handler, context, **payload)
    assert answer["ok"] is False
    assert answer["error"] == "not_found"
    assert answer["message"]


def test_a_cursor_it_never_gave_is_an_invalid_request(seeded, query_handler, context):
    answer = ask(query_handler, context, action="list", cursor="not-a-cursor!", **LINEAGE)
    assert (answer["ok"], answer["error"]) == (False, "invalid_request")
    assert "cursor" in answer["message"]


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        pytest.param({"stream": "orders", "partition": 3}, {"action"}, id="no-action"),
        pytest.param({"action": "forecast", **LINEAGE}, {"action"}, id="unknown-action"),
        pytest.param({"action": 7, **LINEAGE}, {"action"}, id="action-not-a-string"),
        pytest.param({"action": "latest"}, {"stream", "partition"}, id="missing-fields"),
        pytest.param(
            {"action": "latest", "stream": "orders", "partition": -1}, {"partition"}, id="negative"
        ),
        pytest.param(
            {"action": "latest", "stream": "orders", "partition": "3"}, {"partition"}, id="string"
        ),
        pytest.param(
            {"action": "latest", "stream": "orders", "partition": True}, {"partition"}, id="bool"
        ),
        pytest.param(
            {"action": "latest", "stream": "../etc", "partition": 3}, {"stream"}, id="bad-stream"
        ),
        pytest.param(
            {"action": "latest", "partiton": 3, "stream": "orders"},
            {"partition", "partiton"},
            id="typo",
        ),
        pytest.param({"action": "list", "limit": 0, **LINEAGE}, {"limit"}, id="limit-zero"),
        pytest.param({"action": "list", "limit": 5000, **LINEAGE}, {"limit"}, id="limit-huge"),
        pytest.param({"action": "history", "after_seq": -2, **LINEAGE}, {"after_seq"}, id="seq"),
        pytest.param({"action": "history", "partition": 3}, {"stream"}, id="history-no-stream"),
        pytest.param(
            {"action": "history", "stream": "orders", "partition": -1},
            {"partition"},
            id="history-negative",
        ),
        pytest.param({"action": "as_of", **LINEAGE}, {"lsn", "as_of_time"}, id="as-of-nothing"),
        pytest.param(
            {"action": "as_of", "lsn": 1, "as_of_time": "2026-05-01T12:00:00Z", **LINEAGE},
            {"lsn", "as_of_time"},
            id="as-of-both",
        ),
        pytest.param(
            {"action": "as_of", "as_of_time": "2026-05-01T12:00:00", **LINEAGE},
            {"as_of_time"},
            id="naive-time",
        ),
        pytest.param(
            {"action": "as_of", "as_of_time": "last tuesday", **LINEAGE},
            {"as_of_time"},
            id="not-a-time",
        ),
        pytest.param(
            {"action": "snapshot", "snapshot_id": "x", **LINEAGE}, {"snapshot_id"}, id="id"
        ),
        pytest.param(["latest"], {"(payload)"}, id="not-an-object"),
        pytest.param("latest", {"(payload)"}, id="a-string"),
    ],
)
def test_a_malformed_payload_gets_a_validation_answer_naming_the_fields(
    rt, ledger, query_handler, context, capsys, payload, fields
):
    # Given an empty ledger
    before = item_count(ledger)
    # When the console sends a malformed payload
    answer = query_handler(payload, context)
    # Then the answer is a validation answer naming exactly the fields at fault
    assert answer["ok"] is False
    assert answer["error"] == "validation"
    assert {f["field"] for f in answer["fields"]} == fields
    for field in fields:
        assert field in answer["message"]
    json.dumps(answer)
    # And nothing was written
    assert item_count(ledger) == before
    assert emitted_metrics(capsys.readouterr().out)["Query_invalid"] == 1


def test_an_unknown_action_lists_the_actions(rt, query_handler, context):
    answer = query_handler({"action": "forecast", **LINEAGE}, context)
    assert (
        "use one of as_of, generation, generations, history, job, jobs, latest, list, "
        "producer_offsets, snapshot" in answer["message"]
    )


# --- history past the TTL window ----------------------------------------------------------


def _expire_events(rt, pk: str, *seqs: int) -> None:
    """What DynamoDB's TTL does to events older than the window: they leave the table."""
    from snapledger.adapters import dynamodb_codec as codec

    for seq in seqs:
        rt.ledger.client.delete_item(
            TableName=rt.ledger.table_name, Key=codec.key(pk, codec.event_sk(seq))
        )


def test_history_says_which_events_expired_and_how_to_replay_them(
    seeded, ledger, store, clock, query_handler, context
):
    import dataclasses

    from snapledger.runtime import EventArchive, runtime_override
    from tests.support import make_runtime

    archive = EventArchive(
        archive_arn="arn:aws:events:eu-west-1:111122223333:archive/snapledger-events",
        bus_arn="arn:aws:events:eu-west-1:111122223333:event-bus/snapledger",
    )
    rt = dataclasses.replace(make_runtime(ledger, store, clock), event_archive=archive)
    with runtime_override(rt):
        complete = ask(query_handler, context, action="history", **LINEAGE)
        assert "expired" not in complete
        first_kept = complete["events"][3]
        _expire_events(rt, "LIN#orders#3", 1, 2, 3)

        answer = ask(query_handler, context, action="history", **LINEAGE)

        assert answer["events"][0] == first_kept
        expired = answer["expired"]
        assert expired["through_seq"] == 3 and expired["archive"] == archive.archive_arn
        assert expired["replay"].startswith("aws events start-replay ")
        assert f"--event-source-arn {archive.archive_arn}" in expired["replay"]
        assert f"--event-end-time {first_kept['at']}" in expired["replay"]
        assert f"Arn={archive.bus_arn}" in expired["replay"]
        # asking from a seq still held, or for a later page, is a complete answer
        assert "expired" not in ask(
            query_handler, context, action="history", after_seq=3, **LINEAGE
        )
        paged = ask(query_handler, context, action="history", limit=1, **LINEAGE)
        assert "expired" not in ask(
            query_handler, context, action="history", cursor=paged["cursor"], **LINEAGE
        )


def test_history_whose_every_event_expired_says_so_from_the_head(
    seeded, rt, query_handler, context
):
    from snapledger.models.ledger import LineageId

    last = rt.ledger.get_head(LineageId(stream="orders", partition=3)).version
    _expire_events(rt, "LIN#orders#3", *range(1, last + 1))
    answer = ask(query_handler, context, action="history", **LINEAGE)
    assert answer["events"] == []
    assert answer["expired"]["through_seq"] == last
    assert answer["expired"]["archive"] is None  # this runtime has no archive configured
    stream = ask(query_handler, context, action="history", stream="orders")
    assert stream["events"] == [] and "expired" not in stream  # no stream events at all
