"""``snapledger restate heal`` and ``restate restore``, and history's Restate events, with the
functions in-process on a Restate stream (tests/functions/restate_seed.py)."""

from __future__ import annotations

import json

import pytest

from snapledger.cli import confirm
from snapledger.local.router import LocalContext
from tests.cli.support import run_cli
from tests.functions.restate_seed import STREAM, damage, latest_names, seed_restate

CHOSEN = "snap_1000Test1000"  # partition 0's oldest snapshot


@pytest.fixture
def restate(rt):
    return seed_restate(rt)


def run(*argv, input=None):
    return run_cli("--local", *argv, input=input)


def test_heal_shows_each_partition_and_heals_the_broken_one(rt, restate):
    victim = damage(rt, restate[1][2])
    planned = run("restate", "heal", STREAM, "--dry-run")
    assert planned.status == 0, planned
    assert "would_heal" in planned.out and victim in planned.out
    assert latest_names(rt, 1) == restate[1][2].location.snapshot_id
    healed = run("--json", "restate", "heal", STREAM)
    assert healed.status == 0
    outcomes = healed.json()["outcomes"]
    assert [(o["partition"], o["state"]) for o in outcomes] == [(0, "healthy"), (1, "healed")]
    assert latest_names(rt, 1) == restate[1][1].location.snapshot_id
    one = run("--json", "restate", "heal", STREAM, "--partition", "0")
    assert [o["partition"] for o in one.json()["outcomes"]] == [0]


def test_heal_follows_the_cursor_until_every_partition_is_checked(rt, restate, monkeypatch):
    # Given a function with less time left than GC's reserve: one partition per call
    monkeypatch.setattr(LocalContext, "get_remaining_time_in_millis", lambda self: 10_000)
    damage(rt, restate[1][2])
    # When the CLI heals the stream, it calls again after each partial answer
    healed = run("--json", "restate", "heal", STREAM)
    assert healed.status == 0, healed
    answer = healed.json()
    # Then it shows every partition as one complete answer
    assert [(o["partition"], o["state"]) for o in answer["outcomes"]] == [
        (0, "healthy"),
        (1, "healed"),
    ]
    assert answer["complete"] is True
    assert latest_names(rt, 1) == restate[1][1].location.snapshot_id


def test_heal_of_a_stream_that_is_not_restate_is_refused_naming_it(rt, restate):
    ran = run("restate", "heal", "orders")
    assert ran.status == 1
    assert "'orders' is not a Restate stream" in ran.out and "-c layouts" in ran.out


def test_restore_asks_first_and_changes_nothing_when_answered_no(rt, restate, monkeypatch):
    before = latest_names(rt, 0)
    ran = run("restate", "restore", STREAM, "0", CHOSEN, "--reason", "store lost")
    assert ran.status == 2 and "pass --yes" in ran.err
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    ran = run("restate", "restore", STREAM, "0", CHOSEN, "--reason", "store lost", input="n\n")
    assert ran.status == 1 and "latest.json at snap_1000Test1000" in ran.err
    assert "nothing changed" in ran.err
    assert latest_names(rt, 0) == before


def test_restore_with_yes_repoints_and_history_says_who_from_and_to(rt, restate):
    ran = run(
        "--json",
        "restate",
        "restore",
        STREAM,
        "0",
        CHOSEN,
        "--reason",
        "store lost on node-2",
        "--by",
        "erin",
        "--yes",
    )
    assert ran.status == 0, ran
    answer = ran.json()
    assert (answer["snapshot_id"], answer["lsn"]) == (CHOSEN, 1000)
    assert latest_names(rt, 0) == CHOSEN
    # history, as people read it: who, from → to, and why
    history = run("history", STREAM, "0")
    assert history.status == 0
    [line] = [row for row in history.out.splitlines() if "ProducerLatestRepointed" in row]
    previous = restate[0][2].location.snapshot_id
    assert f"latest.json: {previous} (LSN 3000) → {CHOSEN} (LSN 1000)" in line
    assert "restore: store lost on node-2" in line and "erin" in line


def test_history_shows_a_broken_snapshots_files_and_the_heal(rt, restate):
    victim = damage(rt, restate[0][2])
    assert run("restate", "heal", STREAM, "--partition", "0").status == 0
    out = run("history", STREAM, "0").out
    # the broken snapshot's row: the files at fault and why (wrapped in its column)
    lines = out.splitlines()
    at = next(i for i, row in enumerate(lines) if "SnapshotFoundBroken" in row)
    assert "broken: " in lines[at]
    end = next(i for i, row in enumerate(lines) if "ProducerLatestRepointed" in row)
    cells = "".join("".join(row.split()) for row in lines[at:end])
    assert victim in cells and "Restatecannotrestorefromit" in cells
    [repointed] = [row for row in lines if "ProducerLatestRepointed" in row]
    assert "→ " + restate[0][1].location.snapshot_id in repointed
    assert "heal: " in repointed and "snapledger heal" in repointed


def test_history_shows_an_eviction():
    from snapledger.cli.render import readable_event

    row = {"seq": 9, "type": "SnapshotEvicted", "snapshot_id": "snap_1", "lsn": 5, "reason": "r"}
    shown = readable_event(row)
    assert shown["changed"] == "REGISTERED → DELETED (evicted by its producer)"
    assert shown["reason"] == "r"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["0", "01JW8Z3K9Q7N4M2P6R8T0V2X4Y", "--reason", "x"], "not a Restate snapshot id"),
        (["0", "snap_!", "--reason", "x"], "not a Restate snapshot id"),
        (["-1", CHOSEN, "--reason", "x"], "PARTITION"),
        (["1000000000", CHOSEN, "--reason", "x"], "PARTITION"),
        (["0", CHOSEN], "--reason"),
        (["0", CHOSEN, "--reason", ""], "--reason"),
        (["0", CHOSEN, "--reason", "x" * 513], "513 characters"),
        (["0", CHOSEN, "--reason", "x", "--by", "b" * 129], "--by"),
        (["0", CHOSEN, "--reason", "x", "--request-id", "r" * 121], "--request-id"),
    ],
)
def test_restore_arguments_are_checked_before_anything_is_asked_or_sent(
    rt, restate, monkeypatch, argv, said
):
    asked = []
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    monkeypatch.setattr(confirm, "ask", lambda yes, question: asked.append(question) or True)
    ran = run("restate", "restore", STREAM, *argv)
    assert ran.status == 2, ran
    assert said in ran.err
    assert asked == []
    assert latest_names(rt, 0) == restate[0][2].location.snapshot_id


def test_a_refused_restore_says_why(rt, restate):
    from tests.restate.fixtures import write_latest

    write_latest(rt.store, restate[0][2], [restate[0][2]])  # Restate retains only its latest
    ran = run("restate", "restore", STREAM, "0", CHOSEN, "--reason", "x", "--yes")
    assert ran.status == 1 and "does not retain" in ran.out
    answer = json.loads(
        run("--json", "restate", "restore", STREAM, "0", CHOSEN, "--reason", "x", "-y").out
    )
    assert (answer["ok"], answer["error"]) == (False, "invalid_request")


def test_restore_is_said_to_be_a_recovery_tool_not_a_rollback():
    """Restate replays its log after the chosen snapshot: the partition comes back to the
    same state from an older base. The help, the docs and the examples say so, and no
    example reason suggests going back in time."""
    from pathlib import Path

    shown = " ".join(run("restate", "restore", "--help").out.split())
    assert "not a rollback" in shown and "same state" in shown
    restate_md = Path("docs/restate.md").read_text()
    section = restate_md.split("## Restore from a chosen snapshot")[1].split("\n## ")[0]
    assert "not a rollback" in " ".join(section.split())
    console = Path("docs/console.md").read_text()
    section = console.split("### restore a partition from a chosen snapshot")[1]
    assert "not a rollback" in " ".join(section.split())
    texts = [
        Path("README.md").read_text(),
        console,
        restate_md,
        Path("events/gc-restate-restore.json").read_text(),
        Path("shared/snapledger/client/restate_actions.py").read_text(),
    ]
    for text in texts:
        assert "13:00" not in text and "bad deploy" not in text
