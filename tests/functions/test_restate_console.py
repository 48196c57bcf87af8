"""The gc function's Restate actions from the console: heal a stream's latests, restore a
partition from a chosen snapshot; refusals are answers (ok false, the reason), never raised."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from snapledger.entrypoints.gc import LATESTS_BROKEN_METRIC, actions
from snapledger.models.ledger import LineageId
from tests.functions.restate_seed import PREFIX, STREAM, damage, latest_names, seed_restate
from tests.functions.support import FakeLambdaContext, emitted_metrics

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
RESTATE_EVENTS = sorted(EVENTS_DIR.glob("gc-restate-*.json"))
LAMBDA_REQUEST_ID = FakeLambdaContext.aws_request_id


@pytest.fixture
def gc_handler(powertools_env):
    return importlib.import_module("functions.gc").handler


@pytest.fixture
def seeded(rt):
    return seed_restate(rt)


def sid(written) -> str:
    return written.location.snapshot_id


def restore_payload(**fields):
    payload = {
        "action": "restate_restore",
        "stream": STREAM,
        "partition": 0,
        "snapshot_id": "snap_1000Test1000",
        "by": "alice",
        "reason": "store lost on node-2",
    }
    return {**payload, **fields}


def test_every_gc_action_has_a_documented_payload():
    documented = {json.loads(p.read_text()).get("action") for p in EVENTS_DIR.glob("gc-*.json")}
    assert set(actions()) <= documented


@pytest.mark.parametrize("path", RESTATE_EVENTS, ids=lambda p: p.stem)
def test_each_documented_restate_payload_is_answered_ok(seeded, gc_handler, context, path):
    answer = gc_handler(json.loads(path.read_text()), context)
    assert answer["ok"] is True, answer
    assert json.loads(json.dumps(answer)) == answer
    assert f"events/{path.name}" in (EVENTS_DIR.parent / "docs" / "console.md").read_text()


def test_heal_without_a_partition_checks_each_lineage_and_heals_the_broken_one(
    seeded, rt, gc_handler, context, capsys
):
    # Given partition 1's latest with a truncated SST
    victim = damage(rt, seeded[1][2])
    # When the console asks to heal the stream
    answer = gc_handler({"action": "restate_heal", "stream": STREAM}, context)
    # Then partition 0 is healthy, and 1 repointed to its newest healthy retained snapshot
    assert answer["ok"] is True, answer
    assert (answer["action"], answer["stream"], answer["dry_run"]) == (
        "restate_heal",
        STREAM,
        False,
    )
    healthy, healed = answer["outcomes"]
    assert (healthy["partition"], healthy["state"], healthy["names"]) == (
        0,
        "healthy",
        sid(seeded[0][2]),
    )
    assert (healed["partition"], healed["state"], healed["healed_to"]) == (
        1,
        "healed",
        sid(seeded[1][1]),
    )
    assert victim in healed["problems"][0]
    assert latest_names(rt, 1) == sid(seeded[1][1])
    assert latest_names(rt, 0) == sid(seeded[0][2])
    # the broken latest is counted for the alarm, as a GC run's heal check counts it
    assert emitted_metrics(capsys.readouterr().out)[LATESTS_BROKEN_METRIC] == 1
    types = [e.type for e in rt.ledger.list_events(LineageId(stream=STREAM, partition=1)).items]
    assert types[-2:] == ["SnapshotFoundBroken", "ProducerLatestRepointed"]


class NearlyOutOfTime(FakeLambdaContext):
    """An invocation with less time left than GC's reserve (30 s) all along."""

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def test_heal_of_every_partition_stops_when_time_runs_short_and_continues_from_its_cursor(
    seeded, rt, gc_handler
):
    # Given partition 1's latest broken, and an invocation nearly out of time
    damage(rt, seeded[1][2])
    payload = {"action": "restate_heal", "stream": STREAM}
    # When every partition is asked for, it checks one (at least one a call) and says so
    first = gc_handler(payload, NearlyOutOfTime())
    assert first["ok"] is True, first
    assert [o["partition"] for o in first["outcomes"]] == [0]
    assert (first["complete"], first["after_partition"]) == (False, 0)
    assert latest_names(rt, 1) == sid(seeded[1][2])  # not reached yet
    # Then passing the cursor back continues after it, to the end
    rest = gc_handler({**payload, "after_partition": 0}, NearlyOutOfTime())
    assert [(o["partition"], o["state"]) for o in rest["outcomes"]] == [(1, "healed")]
    assert rest["complete"] is True and "after_partition" not in rest
    assert latest_names(rt, 1) == sid(seeded[1][1])


def test_heal_with_time_to_spare_is_complete_in_one_call(seeded, gc_handler, context):
    answer = gc_handler({"action": "restate_heal", "stream": STREAM}, context)
    assert (answer["complete"], len(answer["outcomes"])) == (True, 2)


def test_heal_refuses_a_partition_and_a_cursor_together(seeded, gc_handler, context):
    answer = gc_handler(
        {"action": "restate_heal", "stream": STREAM, "partition": 0, "after_partition": 0},
        context,
    )
    assert (answer["ok"], answer["error"]) == (False, "validation"), answer
    assert {f["field"] for f in answer["fields"]} == {"partition", "after_partition"}
    assert "not both" in answer["fields"][0]["problem"]


def test_a_dry_run_heal_says_what_it_would_do_and_writes_nothing(seeded, rt, gc_handler, context):
    damage(rt, seeded[0][2])
    before = rt.store.get(f"{PREFIX}/0/latest.json")
    answer = gc_handler(
        {"action": "restate_heal", "stream": STREAM, "partition": 0, "dry_run": True}, context
    )
    assert answer["ok"] is True, answer
    [outcome] = answer["outcomes"]
    assert (outcome["state"], outcome["healed_to"]) == ("would_heal", sid(seeded[0][1]))
    assert rt.store.get(f"{PREFIX}/0/latest.json") == before


def test_heal_of_a_partition_restate_has_not_written_says_so(seeded, gc_handler, context):
    answer = gc_handler({"action": "restate_heal", "stream": STREAM, "partition": 7}, context)
    assert [o["state"] for o in answer["outcomes"]] == ["no_pointer"]


def test_an_unreadable_latest_fails_that_partition_alone(seeded, rt, gc_handler, context):
    rt.store.put(f"{PREFIX}/1/latest.json", b"not json")
    answer = gc_handler({"action": "restate_heal", "stream": STREAM}, context)
    assert answer["ok"] is True, answer
    states = {o["partition"]: (o["state"], o.get("note", "")) for o in answer["outcomes"]}
    assert states[0][0] == "healthy"
    assert states[1][0] == "failed" and "latest.json" in states[1][1]
    refused = gc_handler(restore_payload(partition=1, snapshot_id="snap_1001Test1001"), context)
    assert (refused["ok"], refused["error"]) == (False, "invalid_request"), refused
    assert "latest.json" in refused["message"]


def test_restore_repoints_holds_and_records_who(seeded, rt, gc_handler, context):
    answer = gc_handler(restore_payload(), context)
    assert answer["ok"] is True, answer
    assert answer == {
        "ok": True,
        "action": "restate_restore",
        "stream": STREAM,
        "partition": 0,
        "snapshot_id": "snap_1000Test1000",
        "lsn": 1000,
        "previous_snapshot_id": sid(seeded[0][2]),
        "hold_id": f"restore:{LAMBDA_REQUEST_ID}",
    }
    assert latest_names(rt, 0) == "snap_1000Test1000"
    lineage = LineageId(stream=STREAM, partition=0)
    record = rt.ledger.find_snapshot(lineage, "snap_1000Test1000")
    assert [h.by for h in record.holds] == ["alice"]
    events = rt.ledger.list_events(lineage).items
    assert (events[-1].type, events[-1].by, events[-1].reason) == (
        "ProducerLatestRepointed",
        "alice",
        "store lost on node-2",
    )
    # Lambda's retry of the same invocation: the same snapshot and hold, no second event
    # (no previous snapshot: latest.json already named the chosen one)
    again = gc_handler(restore_payload(), context)
    assert again.get("previous_snapshot_id") is None
    assert {**again, "previous_snapshot_id": None} == {**answer, "previous_snapshot_id": None}
    assert len(rt.ledger.list_events(lineage).items) == len(events)


@pytest.mark.parametrize(
    ("payload", "error", "words"),
    [
        (restore_payload(snapshot_id="snap_NoSuchOne"), "not_found", "has no snapshot"),
        (restore_payload(partition=5), "not_found", "has no snapshot"),
        (restore_payload(stream="orders"), "invalid_request", "'orders' is not a Restate stream"),
        ({"action": "restate_heal", "stream": "orders"}, "invalid_request", "SNAPLEDGER_LAYOUTS"),
    ],
    ids=["unknown-snapshot", "unknown-partition", "restore-not-restate", "heal-not-restate"],
)
def test_what_cannot_be_done_is_refused_with_the_reason(
    seeded, rt, gc_handler, context, payload, error, words
):
    before = rt.store.get(f"{PREFIX}/0/latest.json")
    answer = gc_handler(payload, context)
    assert (answer["ok"], answer["error"]) == (False, error), answer
    assert words in answer["message"]
    assert rt.store.get(f"{PREFIX}/0/latest.json") == before


def test_a_snapshot_restate_no_longer_retains_is_refused(seeded, rt, gc_handler, context):
    from tests.restate.fixtures import write_latest

    write_latest(rt.store, seeded[0][2], [seeded[0][2], seeded[0][1]])
    answer = gc_handler(restore_payload(), context)
    assert (answer["ok"], answer["error"]) == (False, "invalid_request"), answer
    assert "does not retain" in answer["message"]
    assert latest_names(rt, 0) == sid(seeded[0][2])


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (restore_payload(snapshot_id="01JW8Z3K9Q7N4M2P6R8T0V2X4Y"), "snapshot_id"),
        (restore_payload(snapshot_id="snap_" + "a" * 65), "snapshot_id"),
        (restore_payload(partition=-1), "partition"),
        (restore_payload(partition=10**40), "partition"),
        (restore_payload(partition="0"), "partition"),
        (restore_payload(by=""), "by"),
        (restore_payload(reason="x" * 513), "reason"),
        (restore_payload(request_id="r" * 121), "request_id"),
        (restore_payload(stream="no/slash"), "stream"),
        ({k: v for k, v in restore_payload().items() if k != "by"}, "by"),
        ({k: v for k, v in restore_payload().items() if k != "partition"}, "partition"),
        ({"action": "restate_heal", "stream": STREAM, "dry_run": "yes"}, "dry_run"),
        ({"action": "restate_heal", "stream": STREAM, "partition": 10**9}, "partition"),
        ({"action": "restate_heal", "stream": STREAM, "partiton": 1}, "partiton"),
        ({"action": "restate_heal"}, "stream"),
    ],
)
def test_a_malformed_restate_payload_names_the_field_and_changes_nothing(
    seeded, rt, gc_handler, context, payload, field
):
    before = rt.store.get(f"{PREFIX}/0/latest.json")
    answer = gc_handler(payload, context)
    assert (answer["ok"], answer["error"]) == (False, "validation"), answer
    assert field in [f["field"] for f in answer["fields"]], answer
    assert rt.store.get(f"{PREFIX}/0/latest.json") == before
