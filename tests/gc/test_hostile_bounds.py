"""Issue 27 row 6: every duration and count GC takes is bounded at the edge, and one
stream's failure is its own.

Before: ``policy_set`` accepted ``min_age_hours`` = 1e12 and every later run died on
``OverflowError`` (every stream, the overdue generations, the stuck-job sweep); a hold
until 9999-12-31 on a REJECTED snapshot overflowed its TTL.
"""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from snapledger.adapters import dynamodb_codec as codec
from snapledger.cli.main import cli
from snapledger.errors import InvalidRequestError
from snapledger.gc_settings import GcConfig, GcSettings
from snapledger.limits import MAX_HOLD_HOURS, MAX_HOURS
from snapledger.models.ledger import LineageId
from snapledger.services import generations
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.policies import get_policy, set_policy
from snapledger.settings import settings_from_env
from tests.functions.conftest import context, powertools_env, rt
from tests.functions.support import sample_event
from tests.gc.support import gc_deps, records, register, stream_log

__all__ = ["context", "powertools_env", "rt"]  # the functions' fixtures, used here

DAY = timedelta(days=1)
CONFIG = GcConfig()  # min_count 3, min_age 24h
END_OF_TIME = "9999-12-31T23:59:59Z"


@pytest.fixture
def gc_handler(powertools_env):
    return importlib.import_module("functions.gc").handler


def plant_policy(ledger, stream: str, policy: dict[str, object]) -> None:
    """A POLICY item as an older release (before the bounds) could have stored it."""
    document = {
        "stream": stream,
        "policy": policy,
        "version": 1,
        "updated_at": "2026-01-01T00:00:00+00:00",
        "updated_by": "",
    }
    ledger.client.put_item(
        TableName=ledger.table_name,
        Item={
            **codec.key(codec.stream_pk(stream), codec.POLICY_SK),
            "document": {"S": json.dumps(document)},
            "version": {"N": "1"},
        },
    )


def old_snapshots(ledger, store, clock, stream: str) -> None:
    for lsn in (10, 20, 30, 40, 50):
        register(ledger, store, clock, lsn, stream=stream)


# -- refused at the edge, naming the field ----------------------------------------------------


@pytest.mark.parametrize("field", ["min_age_hours", "max_age_hours"])
def test_a_policy_of_1e12_hours_is_refused_naming_the_field(rt, gc_handler, context, field):
    answer = gc_handler({"action": "policy_set", "stream": "orders", field: 1e12}, context)
    assert answer["ok"] is False
    assert answer["error"] == "validation"
    assert field in json.dumps(answer) and "Traceback" not in json.dumps(answer)
    assert get_policy(rt.policies, "orders", CONFIG.default_policy()).source == "default"


def test_the_bound_itself_is_accepted_and_one_past_it_refused(rt, gc_handler, context):
    at = {"action": "policy_set", "stream": "orders", "min_age_hours": MAX_HOURS}
    assert gc_handler(at, context)["ok"] is True
    past = {**at, "min_age_hours": MAX_HOURS + 1}
    assert gc_handler(past, context)["ok"] is False


def test_set_policy_itself_refuses_past_the_bound(ledger, clock):
    # (what every caller goes through: the console's payload, the client's keywords)
    with pytest.raises(InvalidRequestError, match="max_age_hours"):
        set_policy(
            stream_log(ledger),
            "orders",
            {"max_age_hours": 1e12},
            default=CONFIG.default_policy(),
            clock=clock,
        )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--min-age-hours", "1e12"], "--min-age-hours"),
        (["--max-age-hours", "1e12"], "--max-age-hours"),
        (["--min-count", "1000"], "--min-count"),
        (["--min-generations", "1000"], "--min-generations"),
    ],
)
def test_the_cli_refuses_past_the_bound_naming_the_option(args, option):
    result = CliRunner().invoke(cli, ["policy", "set", "orders", *args, "--yes"])
    assert result.exit_code == 2
    assert option in result.output and "Traceback" not in result.output


def test_the_cli_refuses_a_hold_past_the_longest(monkeypatch):
    result = CliRunner().invoke(
        cli, ["hold", "orders", "3", "01J00000000000000000000000", "--expires-in-hours", "1e12"]
    )
    assert result.exit_code == 2 and "--expires-in-hours" in result.output


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SNAPLEDGER_DEFAULT_MIN_AGE_HOURS", "1e12"),
        ("SNAPLEDGER_ORPHAN_GRACE_HOURS", "1e12"),
        ("SNAPLEDGER_STUCK_JOB_HOURS", "1e12"),
        ("SNAPLEDGER_LEDGER_TTL_DAYS", "100000000"),
    ],
)
def test_a_setting_past_its_bound_is_refused_at_cold_start_naming_it(name, value):
    environ = {"SNAPLEDGER_TABLE": "ledger", "SNAPLEDGER_ROOT": "file:///tmp/x", name: value}
    with pytest.raises(InvalidRequestError) as refused:
        settings_from_env(GcSettings, environ)
    named = name.replace("DEFAULT_", "DEFAULT_*: the default retention policy is refused: ")
    assert named.removeprefix("SNAPLEDGER_").split(": ")[-1].lower() in str(refused.value).lower()
    assert name.split("_")[1] in str(refused.value)


def test_a_hold_until_9999_on_a_rejected_snapshot_is_refused_naming_the_field(
    rt, gc_handler, context
):
    register(rt.ledger, rt.store, rt.clock, 100, epoch=5)
    fenced = register(rt.ledger, rt.store, rt.clock, 90, epoch=4)
    assert records(rt.ledger)[90].status.value == "REJECTED"
    payload = {
        "action": "hold",
        "stream": "orders",
        "partition": 3,
        "snapshot_id": fenced,
        "expires_at": END_OF_TIME,
    }
    answer = gc_handler(payload, context)
    assert answer["ok"] is False and answer["error"] == "invalid_request"
    assert "expires_at" in answer["message"] and "876000" in answer["message"]
    assert records(rt.ledger)[90].holds == ()
    # The longest hold allowed is taken
    longest = rt.clock.now() + timedelta(hours=MAX_HOLD_HOURS) - timedelta(minutes=1)
    answer = gc_handler({**payload, "expires_at": longest.isoformat()}, context)
    assert answer["ok"] is True, answer


# -- what is already stored does not crash GC -------------------------------------------------


def test_a_policy_stored_before_the_bound_is_clamped_and_its_stream_collected(ledger, store, clock):
    # Given a stream whose stored policy says 1e12 hours (stored before the bound)
    old_snapshots(ledger, store, clock, "orders")
    plant_policy(ledger, "orders", {"min_count": 3, "min_age_hours": 1e12})
    clock.advance(10 * DAY)
    # When GC runs: no OverflowError; the stream keeps everything (100 years), with a note
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    assert report.complete and not report.failed
    assert "min_age_hours" in report.to_dict()["policy_notes"]["orders"][0]
    assert set(records(ledger, "orders").values()) and all(
        r.status.value == "REGISTERED" for r in records(ledger, "orders").values()
    )
    # and the console shows the policy that applies, and why
    effective = get_policy(
        gc_deps(ledger, store, clock).policies, "orders", CONFIG.default_policy()
    )
    assert effective.policy.min_age_hours == MAX_HOURS and effective.to_dict()["clamped"]


def test_a_stream_whose_stored_policy_is_hostile_fails_alone(ledger, store, clock):
    # Given two streams with due snapshots, one whose stored policy cannot be read, and an
    # overdue stream snapshot on each
    streams = stream_log(ledger)
    for stream in ("orders", "payments"):
        old_snapshots(ledger, store, clock, stream)
        generations.request_stream_snapshot(
            streams, stream, [3], clock=clock, deadline=clock.now() + timedelta(hours=1)
        )
    plant_policy(ledger, "orders", {"min_count": 3, "min_age_hours": "soon"})
    clock.advance(10 * DAY)
    # When GC runs
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    # Then the other stream is collected, and its overdue generation failed
    assert {lsn: r.status.value for lsn, r in records(ledger, "payments").items()} == {
        10: "DELETED",
        20: "DELETED",
        30: "REGISTERED",
        40: "REGISTERED",
        50: "REGISTERED",
    }
    # (the hostile stream's own log cannot be read past its POLICY item: its generation waits)
    assert [g.stream for g in report.generations_failed] == ["payments"]
    # and the hostile stream is untouched, its failure answered in the result
    assert all(r.status.value == "REGISTERED" for r in records(ledger, "orders").values())
    answer = report.to_dict()
    assert list(answer["failed_streams"]) == ["orders"]
    assert "min_age_hours" in answer["failed_streams"]["orders"]
    assert answer["failed"] is True and answer["counts"]["streams_failed"] == 1
    assert report.complete  # the run went through every step


class ExplodingLedger:
    """The ledger, raising a bug's exception (not a SnapledgerError) for one stream."""

    def __init__(self, inner, stream: str) -> None:
        self.inner, self.stream = inner, stream

    def list_live(self, lineage: LineageId, *args, **kw):
        if lineage.stream == self.stream:
            raise OverflowError("date value out of range")
        return self.inner.list_live(lineage, *args, **kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_any_unexpected_error_of_one_stream_fails_it_alone(ledger, store, clock):
    for stream in ("orders", "payments"):
        old_snapshots(ledger, store, clock, stream)
    clock.advance(10 * DAY)
    report = run_gc(gc_deps(ExplodingLedger(ledger, "orders"), store, clock), config=CONFIG)
    assert [r.status.value for r in records(ledger, "payments").values()].count("DELETED") == 2
    assert report.failed_streams == {"orders": "OverflowError: date value out of range"}
    assert report.complete and report.failed


def test_the_scheduled_run_fails_after_collecting_the_others(
    rt, gc_handler, context, ledger, store, clock
):
    for stream in ("orders", "payments"):
        old_snapshots(rt.ledger, rt.store, rt.clock, stream)
    plant_policy(rt.ledger, "orders", {"min_count": 3, "min_age_hours": "soon"})
    rt.clock.advance(10 * DAY)
    # A console run answers with the failure in its report
    answer = gc_handler({"dry_run": True}, context)
    assert answer["ok"] is True and answer["report"]["failed_streams"].keys() == {"orders"}
    # The schedule's invocation fails (Lambda retries it, the Errors alarm fires), after
    # the other stream was collected
    with pytest.raises(Exception, match="stream orders"):
        gc_handler(sample_event("eventbridge-scheduled.json"), context)
    assert [r.status.value for r in records(rt.ledger, "payments").values()].count("DELETED") == 2


def test_a_hold_until_9999_planted_in_the_table_does_not_crash_gc(
    ledger, store, clock, monkeypatch
):
    # Given a REJECTED snapshot held until 9999-12-31 (as before the bound: planted) and
    # another one past its grace window
    register(ledger, store, clock, 100, epoch=5)
    held = register(ledger, store, clock, 90, epoch=4)
    register(ledger, store, clock, 80, epoch=4)
    monkeypatch.setattr("snapledger.core.gc_rules.hold_expiry_problem", lambda *a: None)
    monkeypatch.setattr("snapledger.services.holds.hold_expiry_bound_problem", lambda *a: None)
    lineage = LineageId(stream="orders", partition=3)
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    hold_snapshot(ledger, lineage, held, clock=clock, expires_at=end, hold_id="forever")
    hold_snapshot(ledger, lineage, held, clock=clock, expires_at=end, hold_id="twice")
    monkeypatch.undo()
    clock.advance(2 * DAY)
    # When GC runs: the held one is kept, the other collected, nothing overflows
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    assert report.complete and not report.failed
    assert records(ledger)[90].status.value == "REJECTED"
    assert records(ledger)[80].status.value == "DELETED"
