"""Honest job feedback (wait, spinner, final state, output or reason, exit 1 on failure) and
destructive commands that ask (gc, release, a policy set that lowers retention)."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from snapledger.cli import app as cli_app
from snapledger.cli import confirm, job_commands, waiting
from snapledger.cli.confirm import lowered_retention
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.cli.conftest import InProcess
from tests.cli.support import run_cli
from tests.support import write_snapshot


class Scripted(InProcess):
    """The functions in-process, but a job's state follows ``states`` as it is asked for."""

    def __init__(self, states, reason=None):
        self.states = list(states)
        self.reason = reason
        self.job_queries = 0

    def invoke(self, function, payload):
        answer = super().invoke(function, payload)
        if payload.get("action") == "job" and answer.get("ok"):
            self.job_queries += 1
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            failed = state in ("FAILED", "CANCELLED")
            answer["job"] = {
                **answer["job"],
                "state": state,
                "failure_reason": self.reason if failed else None,
            }
        return answer


@pytest.fixture
def jobs_go(rt, monkeypatch):
    """Install a job script: ``jobs_go(states, reason)``; polls without sleeping."""
    monkeypatch.setattr(waiting, "POLL_SECONDS", 0.0)

    def install(states, reason=None):
        scripted = Scripted(states, reason)
        monkeypatch.setattr(cli_app, "_transport", lambda options: scripted)
        return scripted

    return install


def run(*argv, input=None):
    return run_cli("--local", *argv, input=input)


# -- waiting -------------------------------------------------------------------------------


def test_a_failed_job_is_followed_to_its_end_and_exits_1(seeded, jobs_go):
    jobs_go(["SUBMITTED", "RUNNING", "FAILED"], reason="changelog gap at 350")
    ran = run("restore", "orders", "3", "--target-lsn", "350", "--wait")
    assert ran.status == 1, ran.out
    states = [m[1] for m in re.finditer(r"^\s*\d+ s  (\w+)$", ran.out, re.MULTILINE)]
    assert states == ["SUBMITTED", "RUNNING"]  # the final state: once, with the time waited
    assert ran.out.count("FAILED") == 1 and re.search(r"job [\w-]+ FAILED after ", ran.out)
    assert "reason: changelog gap at 350" in ran.out


def test_a_successful_restore_says_where_its_output_is(seeded, jobs_go):
    jobs_go(["SUBMITTED", "SUCCESS"])
    ran = run("--json", "restore", "orders", "3", "--wait")
    assert ran.status == 0
    answer = json.loads(ran.out)  # one JSON document: the launch answer and the final job
    assert answer["job"]["state"] == "SUCCESS"
    ran = run("jobs", "wait", answer["job_id"])
    assert ran.status == 0 and f"output: restores/{answer['job_id']}/3/" in ran.out


def test_bootstrap_and_restore_stream_wait_too(seeded, rt, jobs_go):
    jobs_go(["SUCCESS"])
    ran = run("bootstrap", "payments", "--partitions", "0", "--wait")
    assert ran.status == 0 and "SUCCESS" in ran.out and "output: snapshots/payments/0/" in ran.out
    jobs_go(["CANCELLED"], reason="cancelled by ann")
    ran = run("restore-stream", "orders", "--generation", "1", "--wait")
    assert ran.status == 1 and "no generation 1" in ran.out  # refused: nothing to wait for
    # Given a completed generation 1
    assert run("stream-snapshot", "orders", "--partitions", "3").status == 0
    key = write_snapshot(rt.store, "orders", 3, 360, generation=1)
    register_manifest(
        key,
        ledger=rt.ledger,
        store=rt.store,
        clock=rt.clock,
        streams=rt.streams,
        layouts=NATIVE_ONLY,
    )
    ran = run("restore-stream", "orders", "--generation", "1", "--wait")
    assert ran.status == 1 and "CANCELLED after" in ran.out and "cancelled by ann" in ran.out


def test_waiting_is_the_default_on_a_terminal_only(seeded, jobs_go, monkeypatch):
    scripted = jobs_go(["RUNNING", "SUCCESS"])
    ran = run("restore", "orders", "3")  # not a terminal: answers at once
    assert ran.status == 0 and scripted.job_queries == 0 and "SUBMITTED" in ran.out
    monkeypatch.setattr(job_commands, "stdout_is_terminal", lambda: True)
    ran = run("restore", "orders", "3", "--no-wait")
    assert ran.status == 0 and scripted.job_queries == 0
    ran = run("restore", "orders", "3")
    assert ran.status == 0 and scripted.job_queries == 2 and "SUCCESS after" in ran.out


def test_a_wait_that_gives_up_says_how_to_wait_again(seeded, jobs_go):
    jobs_go(["RUNNING"])
    job_id = json.loads(run("--json", "restore", "orders", "3").out)["job_id"]
    ran = run("jobs", "wait", job_id, "--timeout-seconds", "0")
    assert ran.status == 1 and "still RUNNING" in ran.out
    assert "wait again, or look it up with snapledger jobs wait" in ran.out


def test_waiting_for_an_unknown_job_is_refused(seeded, jobs_go):
    jobs_go(["RUNNING"])
    ran = run("jobs", "wait", "nope")
    assert ran.status == 1 and "there is no job nope" in ran.out


# -- asking --------------------------------------------------------------------------------


def snapshot_statuses(stream="orders", partition="3"):
    ran = run_cli("--local", "--json", "list", stream, partition)
    return [s["status"] for s in ran.json()["snapshots"]]


@pytest.fixture
def doomed(seeded, rt):
    """A policy that deletes the two older snapshots (set with --yes: it lowers retention)."""
    rt.clock.advance(timedelta(hours=1))
    ran = run("policy", "set", "orders", "--min-count", "1", "--min-age-hours", "0", "--yes")
    assert ran.status == 0, ran.out
    return seeded


def test_the_gc_plan_is_nested_lineage_snapshot_decision_reasons(doomed):
    ran = run("gc", "--dry-run")
    assert ran.status == 0
    assert "orders/3" in ran.out and "None" not in ran.out and '{"lsn"' not in ran.out
    newest, *older = reversed(doomed)
    kept = ran.out.splitlines()[
        next(i for i, line in enumerate(ran.out.splitlines()) if newest in line)
    ]
    assert "keep" in kept.split() and "latest," in kept
    for snapshot_id in older:
        [row] = [line for line in ran.out.splitlines() if snapshot_id in line]
        assert "delete" in row.split()
    assert max(len(line) for line in ran.out.splitlines()) <= 200


def test_gc_without_a_terminal_or_yes_is_refused_before_anything_is_sent(doomed):
    ran = run("gc")
    assert ran.status == 2 and "pass --yes" in ran.err
    assert snapshot_statuses().count("REGISTERED") == 3


def test_gc_shows_the_plan_and_does_nothing_when_answered_no(doomed, monkeypatch):
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run("gc", input="n\n")
    assert ran.status == 1 and "GC plan" in ran.out and "delete" in ran.out
    assert "2 snapshot(s) planned for deletion" in ran.err and "nothing changed" in ran.err
    assert snapshot_statuses().count("REGISTERED") == 3


def test_gc_runs_when_answered_yes_or_given_yes(doomed, monkeypatch):
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run("gc", input="y\n")
    assert ran.status == 0 and snapshot_statuses().count("REGISTERED") == 1
    monkeypatch.setattr(confirm, "interactive", lambda: False)
    assert run("gc", "--yes").status == 0


def test_release_asks(seeded, monkeypatch):
    held = run("--json", "hold", "orders", "3", seeded[0], "--reason", "audit")
    assert held.status == 0
    ran = run("release", "orders", "3", seeded[0])
    assert ran.status == 2 and "pass --yes" in ran.err
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run("release", "orders", "3", seeded[0], input="n\n")
    assert ran.status == 1 and "GC may then delete it" in ran.err
    holds = run("--json", "hold", "orders", "3", seeded[0], "--reason", "audit").out
    assert json.loads(holds)["holds"], holds  # still held
    ran = run("--json", "release", "orders", "3", seeded[0], input="y\n")
    answer = json.loads(ran.out[ran.out.index("{") :])  # CliRunner echoes the typed "y" there
    assert ran.status == 0 and answer["holds"] == []


def test_a_policy_set_that_lowers_retention_asks(seeded, monkeypatch):
    # raising a floor asks nothing
    assert run("policy", "set", "orders", "--min-count", "5").status == 0
    # lowering one is refused without a terminal or --yes, and changes nothing
    ran = run("policy", "set", "orders", "--min-count", "2")
    assert ran.status == 2 and "pass --yes" in ran.err
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run("policy", "set", "orders", "--max-count", "9", input="n\n")
    assert ran.status == 1 and "max_count: none → 9" in ran.err
    policy = run("--json", "policy", "get", "orders").out
    assert json.loads(policy)["policy"]["min_count"] == 5
    assert json.loads(policy)["policy"]["max_count"] is None
    ran = run("policy", "set", "orders", "--min-count", "2", input="y\n")
    assert ran.status == 0 and "min_count: 5 → 2" in ran.err


@pytest.mark.parametrize(
    ("change", "lowered"),
    [
        ({"min_count": 2}, ["min_count: 3 → 2"]),
        ({"min_count": 4}, []),
        ({"min_age_hours": 1.0}, ["min_age_hours: 24.0 → 1.0"]),
        ({"min_generations": 0}, ["min_generations: 1 → 0"]),
        ({"max_count": 10}, ["max_count: none → 10"]),
        ({"max_age_hours": 100.0}, ["max_age_hours: 200.0 → 100.0"]),
        ({"max_age_hours": 300.0}, []),
        ({"min_count": None}, []),
    ],
)
def test_what_lowers_retention(change, lowered):
    current = {
        "min_count": 3,
        "min_age_hours": 24.0,
        "min_generations": 1,
        "max_count": None,
        "max_age_hours": 200.0,
    }
    assert lowered_retention(current, change) == lowered
