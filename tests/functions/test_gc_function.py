"""The gc function: dry run, scheduled run, holds and policies, with console payloads."""

from __future__ import annotations

import hashlib
import importlib
import json
from datetime import timedelta
from pathlib import Path

import pytest

from snapledger.services.gc_fanout import GcShard, ShardLineage
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.functions.support import FakeLambdaContext, sample_event, sqs_event
from tests.support import write_snapshot

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
# The Restate actions' payloads need a Restate stream: test_restate_console.py sends them.
GC_EVENTS = sorted(p for p in EVENTS_DIR.glob("gc-*.json") if not p.name.startswith("gc-restate-"))
DOCUMENTED_ID = "01JW8Z3K9Q7N4M2P6R8T0V2X4Y"


@pytest.fixture
def gc_handler(powertools_env):
    return importlib.import_module("functions.gc").handler


@pytest.fixture
def aged(rt):
    """orders/3 with six snapshots registered two days apart (the first DOCUMENTED_ID)."""
    for n, lsn in enumerate(range(100, 700, 100)):
        key = write_snapshot(
            rt.store, "orders", 3, lsn, snapshot_id=DOCUMENTED_ID if n == 0 else None
        )
        register_manifest(
            key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
        )
        rt.clock.advance(timedelta(days=2))


def snapshot_state(rt):
    from snapledger.models.ledger import LineageId

    lineage = LineageId(stream="orders", partition=3)
    listed = rt.ledger.list_snapshots(lineage, limit=100).items
    return [(s.lsn, s.status.value) for s in listed], sorted(
        i.key for i in rt.store.list("snapshots/")
    )


@pytest.mark.parametrize("path", GC_EVENTS, ids=lambda p: p.stem)
def test_every_gc_console_payload_is_answered_ok(aged, rt, gc_handler, context, path):
    answer = gc_handler(json.loads(path.read_text()), context)
    assert answer["ok"] is True, answer
    assert f"events/{path.name}" in (EVENTS_DIR.parent / "docs" / "console.md").read_text()


def test_dry_run_returns_the_plan_and_changes_nothing(aged, rt, gc_handler, context):
    before = snapshot_state(rt)
    answer = gc_handler({"dry_run": True}, context)
    assert answer["ok"] and answer["report"]["dry_run"] is True
    assert snapshot_state(rt) == before
    assert "latest" in json.dumps(answer["report"])


def test_the_scheduled_event_runs_gc_under_the_default_policy(aged, rt, gc_handler, context):
    answer = gc_handler(sample_event("eventbridge-scheduled.json"), context)
    assert answer["ok"] is True
    statuses = dict(snapshot_state(rt)[0])
    # default policy: min_count 3, min_age 24h -> the three oldest go
    assert [statuses[lsn] for lsn in (100, 200, 300)] == ["DELETED"] * 3
    assert [statuses[lsn] for lsn in (400, 500, 600)] == ["REGISTERED"] * 3


def test_a_held_snapshot_survives_gc_until_released(aged, rt, gc_handler, context):
    held = gc_handler(json.loads((EVENTS_DIR / "gc-hold.json").read_text()), context)
    assert held["ok"], held
    gc_handler({"dry_run": False}, context)
    assert dict(snapshot_state(rt)[0])[100] == "REGISTERED"
    gc_handler(json.loads((EVENTS_DIR / "gc-release.json").read_text()), context)
    gc_handler({"dry_run": False}, context)
    assert dict(snapshot_state(rt)[0])[100] == "DELETED"


def test_policy_set_then_get(rt, gc_handler, context):
    gc_handler({"action": "policy_set", "stream": "orders", "min_count": 5}, context)
    answer = gc_handler({"action": "policy_get", "stream": "orders"}, context)
    assert answer["ok"] and "5" in json.dumps(answer)


def stream_history(rt):
    return [(e.seq, e.type) for e in rt.streams.list_events("orders").items]


def test_policy_set_and_reset_answer_the_event_they_appended(rt, gc_handler, context):
    # When the console sets a policy, then resets it
    set_answer = gc_handler(
        {"action": "policy_set", "stream": "orders", "min_count": 5, "by": "ann"}, context
    )
    reset_answer = gc_handler(
        {"action": "policy_reset", "stream": "orders", "by": "bob", "request_id": "reset-1"},
        context,
    )
    # Then each answer is the policy in force and the event appended, as JSON
    assert set_answer["ok"] and set_answer["outcome"] == "set", set_answer
    assert (set_answer["source"], set_answer["version"]) == ("stream", 1)
    assert set_answer["event"]["type"] == "PolicySet" and set_answer["event"]["by"] == "ann"
    assert reset_answer["ok"] and reset_answer["outcome"] == "reset", reset_answer
    assert reset_answer["source"] == "default" and reset_answer["policy"]["min_count"] == 3
    assert reset_answer["event"]["previous_policy"]["min_count"] == 5
    assert json.loads(json.dumps(reset_answer)) == reset_answer
    assert stream_history(rt) == [(1, "PolicySet"), (2, "PolicyReset")]


def test_a_retried_invocation_changes_the_policy_once(rt, gc_handler, context):
    # Given an asynchronous invocation that Lambda retries (same request id, same payload)
    payload = {"action": "policy_set", "stream": "orders", "min_count": 5}
    first = gc_handler(payload, context)
    gc_handler({**payload, "min_count": 6, "request_id": "someone-else"}, context)
    # When the retry arrives after another change
    retried = gc_handler(payload, context)
    # Then it is recognised: no second event, the later change stands
    assert (first["outcome"], retried["outcome"]) == ("set", "duplicate")
    assert retried["policy"]["min_count"] == 6 and retried["event"] is None
    assert stream_history(rt) == [(1, "PolicySet"), (2, "PolicySet")]


def test_a_change_on_a_stale_version_is_refused_as_a_conflict(rt, gc_handler, context):
    gc_handler({"action": "policy_set", "stream": "orders", "min_count": 5}, context)
    answer = gc_handler(
        {"action": "policy_reset", "stream": "orders", "expected_version": 0, "request_id": "r"},
        context,
    )
    assert answer["ok"] is False and answer["error"] == "conflict", answer
    assert "version 1, not 0" in answer["message"] and "read it again" in answer["message"]
    assert stream_history(rt) == [(1, "PolicySet")]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"dry_run": "yes"}, "dry_run"),
        ({"action": "purge"}, "action"),
        ({"action": "hold", "stream": "orders", "partition": 3}, "snapshot_id"),
        ({"action": "policy_set", "stream": "orders", "min_count": 0}, "min_count"),
        ({"action": "policy_reset", "stream": "orders", "min_count": 4}, "min_count"),
        ({"action": "policy_reset"}, "stream"),
        (
            {"action": "policy_reset", "stream": "orders", "expected_version": -1},
            "expected_version",
        ),
        ({"dry_run": True, "strem": "orders"}, "strem"),
    ],
)
def test_malformed_gc_payloads_name_the_field_and_change_nothing(
    aged, rt, gc_handler, context, payload, field
):
    before = snapshot_state(rt)
    answer = gc_handler(payload, context)
    assert answer["ok"] is False and answer["error"] == "validation", answer
    assert any(f["field"] == field for f in answer["fields"]), answer
    assert snapshot_state(rt) == before


def test_an_invalid_policy_is_refused_with_a_reason(rt, gc_handler, context):
    answer = gc_handler(
        {"action": "policy_set", "stream": "orders", "max_count": 1, "min_count": 3}, context
    )
    assert answer["ok"] is False and answer["error"] == "invalid_request", answer


REGION = "us-east-1"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:123456789012:snapledger-gc-shards"


def message(message_id: str, body: str) -> dict[str, object]:
    """A message as ReceiveMessage returns it."""
    return {
        "MessageId": message_id,
        "ReceiptHandle": f"handle-{message_id}",
        "Body": body,
        "Attributes": {"ApproximateReceiveCount": "1"},
        "MD5OfBody": hashlib.md5(body.encode()).hexdigest(),
    }


def shard_message(message_id: str, *partitions: int) -> dict[str, object]:
    lineages = tuple(ShardLineage(stream="orders", partition=p) for p in partitions)
    return message(
        message_id, GcShard(run_id="coordinator-run", lineages=lineages).model_dump_json()
    )


def test_a_shard_from_the_queue_is_collected_and_acknowledged(aged, rt, gc_handler, context):
    # Given a shard naming orders/3 and a lineage that does not exist
    event = sqs_event([shard_message("m-1", 3, 99)], QUEUE_ARN, REGION)
    # When the trigger delivers it
    answer = gc_handler(event, context)
    # Then the lineage is collected under the default policy and no message is failed
    assert answer["batchItemFailures"] == []
    [shard] = answer["shards"]
    assert shard["report"]["run_id"] == "coordinator-run" and shard["report"]["complete"]
    assert [(r["stream"], r["partition"]) for r in shard["report"]["lineages"]] == [("orders", 3)]
    statuses = dict(snapshot_state(rt)[0])
    assert [statuses[lsn] for lsn in (100, 200, 300)] == ["DELETED"] * 3


def test_a_message_that_is_not_a_shard_is_failed_for_the_dead_letter_queue(
    aged, rt, gc_handler, context
):
    before = snapshot_state(rt)
    event = sqs_event(
        [message("m-bad", '{"lineages": "orders/3"}'), shard_message("m-ok", 3)],
        QUEUE_ARN,
        REGION,
    )
    answer = gc_handler(event, context)
    # The bad one is named (run_id missing, lineages not a list); the good one still ran
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m-bad"}]
    bad = answer["shards"][0]
    assert "not a GC shard" in bad["error"] and "run_id" in bad["error"]
    assert snapshot_state(rt) != before


class OutOfTime(FakeLambdaContext):
    def get_remaining_time_in_millis(self) -> int:
        return 1_000  # under the 30 s reserve


def test_a_shard_cut_short_by_the_time_budget_is_delivered_again(aged, rt, gc_handler):
    before = snapshot_state(rt)
    event = sqs_event([shard_message("m-1", 3)], QUEUE_ARN, REGION)
    answer = gc_handler(event, OutOfTime())
    assert answer["batchItemFailures"] == [{"itemIdentifier": "m-1"}]
    assert snapshot_state(rt) == before


def test_the_keep_reasons_console_md_names_are_the_ones_gc_gives() -> None:
    import re

    from snapledger.models.retention_reasons import KeepReason

    text = (EVENTS_DIR.parent / "docs" / "console.md").read_text()
    listed = re.search(r"kept with all its reasons \(([^)]*)\)", text.replace("\n", " "))
    assert listed is not None
    named = re.findall(r"`(\w+)`", listed.group(1))
    assert named and set(named) <= {reason.value for reason in KeepReason}
