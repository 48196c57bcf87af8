"""``snapledger gc`` as people read it: under each lineage's decisions, what the run found
there (a Restate partition's heal, the run's notes, its errors), as ``--json`` has them."""

from __future__ import annotations

import pytest

from tests.cli.support import run_cli
from tests.functions.restate_seed import damage, seed_restate
from tests.restate.fixtures import write_latest


@pytest.fixture
def restate(rt):
    return seed_restate(rt, partitions=(0,))


def run(*argv, input=None):
    return run_cli("--local", *argv, input=input)


def squeezed(text: str) -> str:
    """``text`` without its white space (a table wraps long lines in their cell)."""
    return "".join(text.split())


def evict_oldest(rt, restate):
    """As Restate does beyond its num-retained: the oldest snapshot's files deleted and
    latest.json no longer retaining it. Its location."""
    evicted = restate[0][0].location
    rt.store.delete_many([info.key for info in rt.store.list(evicted.folder)])
    write_latest(rt.store, restate[0][2], list(reversed(restate[0][1:])))
    return evicted


def test_the_table_says_a_snapshot_the_policy_keeps_was_evicted_by_restate(rt, restate):
    # Given Restate evicted the oldest snapshot (files gone, no longer retained) while the
    # default policy (newest 3, 24 h) keeps it
    evicted = evict_oldest(rt, restate)
    # When GC runs and shows its table
    ran = run("gc", "--yes")
    # Then the lineage's row says so, and what heal found
    assert ran.status == 0, ran
    shown = squeezed(ran.out)
    assert squeezed(f"note: {evicted.snapshot_id} (LSN 1000) was evicted by Restate") in shown
    assert squeezed("raise it (up to 255)") in shown
    assert (
        squeezed(f"heal: healthy (latest.json named {restate[0][2].location.snapshot_id})") in shown
    )


def test_the_table_shows_a_heal_with_each_problem(rt, restate):
    # Given the SST of the snapshot latest.json names was truncated
    victim = damage(rt, restate[0][2])
    # When a dry run shows its plan
    ran = run("gc", "--dry-run")
    # Then the lineage's row names the heal it would make and the file at fault
    assert ran.status == 0, ran
    names, to = restate[0][2].location.snapshot_id, restate[0][1].location.snapshot_id
    shown = squeezed(ran.out)
    assert squeezed(f"heal: would_heal (latest.json named {names} → {to})") in shown
    assert squeezed(f"broken: '{victim}': it is 154 bytes in the store") in shown


def test_findings_are_one_line_each_and_none_when_there_are_none():
    from snapledger.cli.render import lineage_findings

    lineage = {
        "heal": {
            "partition": 0,
            "state": "unhealed",
            "names": "snap_1",
            "problems": ["a", "b"],
            "note": "raise num-retained",
        },
        "notes": ["n1"],
        "errors": ["listing failed: boom"],
    }
    assert lineage_findings(lineage) == [
        "heal: unhealed (latest.json named snap_1)",
        "  broken: a",
        "  broken: b",
        "  raise num-retained",
        "note: n1",
        "error: listing failed: boom",
    ]
    assert lineage_findings({"heal": None, "notes": [], "errors": []}) == []
    assert lineage_findings({"heal": {"partition": 0, "state": "no_pointer"}}) == [
        "heal: no_pointer"
    ]


def test_a_snapshot_evicted_during_the_run_is_not_shown_as_kept(rt, restate):
    evicted = evict_oldest(rt, restate)
    ran = run("--json", "gc", "--yes")
    [lineage] = ran.json()["report"]["lineages"]
    assert evicted.snapshot_id not in [kept["snapshot_id"] for kept in lineage["kept"]]
    assert lineage["evicted"] == [evicted.snapshot_id]


def test_a_dry_run_names_an_evicted_snapshot_and_does_not_show_it_kept(rt, restate):
    evicted = evict_oldest(rt, restate)
    ran = run("--json", "gc", "--dry-run")
    [lineage] = ran.json()["report"]["lineages"]
    assert evicted.snapshot_id not in [kept["snapshot_id"] for kept in lineage["kept"]]
    assert lineage["evicted"] == [evicted.snapshot_id]
    assert any(
        note.startswith(f"{evicted.snapshot_id} (LSN {evicted.lsn}) was evicted by Restate")
        for note in lineage["notes"]
    )
