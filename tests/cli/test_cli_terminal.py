"""The CLI in an 80-column terminal: ids never wrap, the GC plan's borders hold, zero
counters hidden, job state changes shown from → to, elapsed time on the spinner."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

from click.testing import CliRunner
from rich.console import Console

from snapledger.cli import main as cli
from snapledger.cli import waiting
from tests.cli.support import Ran, run_cli

WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def at_80_columns(*argv: str) -> Ran:
    """``snapledger --local ARGV`` with stdout a terminal 80 columns wide (as rich sees it)."""
    result = CliRunner().invoke(
        cli.cli,
        ["--local", *argv],
        prog_name="snapledger",
        env={"COLUMNS": str(WIDTH), "TTY_COMPATIBLE": "1"},
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    # the in-process functions' cold-start metric left out, as run_cli leaves it out
    out = [line for line in result.stdout.splitlines() if not line.startswith('{"_aws"')]
    return Ran(result.exit_code, _ANSI.sub("", "\n".join(out)), _ANSI.sub("", result.stderr))


def fits(out: str) -> bool:
    return all(len(line) <= WIDTH for line in out.splitlines())


def shown_whole_on_one_line(identifier: str, out: str) -> bool:
    """The id, or its start and end around an ellipsis, on one line (never split)."""
    return any(
        identifier in line or re.search(rf"{identifier[:4]}\w*…\w*{identifier[-4:]}", line)
        for line in out.splitlines()
    )


def test_ids_never_wrap_at_80_columns(seeded):
    ran = at_80_columns("list", "orders", "3")
    assert ran.status == 0 and fits(ran.out), ran.out
    for snapshot_id in seeded:
        assert shown_whole_on_one_line(snapshot_id, ran.out), ran.out
    # and --json has them whole
    listed = run_cli("--local", "--json", "list", "orders", "3").json()["snapshots"]
    assert {s["snapshot_id"] for s in listed} == set(seeded)


def test_history_at_80_columns_shows_job_state_changes_from_to(seeded):
    job_id = run_cli("--local", "--json", "restore", "orders", "3", "--no-wait").json()["job_id"]
    ran = at_80_columns("history", "orders", "3")
    assert ran.status == 0 and fits(ran.out), ran.out
    [changed] = [line for line in ran.out.splitlines() if "JobStateChanged" in line]
    assert "REQUESTED → SUBMITTED" in changed
    assert shown_whole_on_one_line(job_id, ran.out)
    # what did not fit is named, not wrapped
    assert "--json has them" in ran.out


def test_the_gc_plan_at_80_columns_keeps_its_borders_and_hides_zero_counters(seeded, rt):
    rt.clock.advance(timedelta(hours=1))
    argv = ("policy", "set", "orders", "--min-count", "1", "--min-age-hours", "0", "--yes")
    assert run_cli("--local", *argv).status == 0
    ran = at_80_columns("gc", "--dry-run")
    assert ran.status == 0 and fits(ran.out), ran.out
    lines = ran.out.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert len({len(line) for line in table}) == 1, ran.out  # every row meets the border
    assert all(line.rstrip()[-1] in "┓┃┩│┘┤" for line in table), ran.out
    for snapshot_id in seeded:
        assert shown_whole_on_one_line(snapshot_id, ran.out), ran.out
    # the plan first, then the counters that are not 0
    assert lines.index(next(line for line in lines if "GC plan" in line)) == 0
    assert "snapshots_planned_for_deletion" in ran.out
    assert "snapshots_deleted" not in ran.out and "orphans_deleted" not in ran.out
    assert (
        run_cli("--local", "--json", "gc", "--dry-run").json()["report"]["counts"][
            "snapshots_deleted"
        ]
        == 0
    )  # --json keeps every counter


def test_jobs_show_lists_transitions_from_to(seeded, rt):
    job_id = run_cli("--local", "--json", "restore", "orders", "3", "--no-wait").json()["job_id"]
    record = run_cli("--local", "--json", "jobs", "show", job_id).json()["job"]
    states = [t["state"] for t in record["transitions"]]
    ran = at_80_columns("jobs", "show", job_id)
    assert ran.status == 0 and fits(ran.out), ran.out
    pairs = list(itertools.pairwise(states))
    assert pairs, states
    for before, after in pairs:
        assert f"{before} → {after}" in ran.out


def test_the_spinner_shows_the_time_waited(seeded, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(waiting, "clock", lambda: now[0])
    monkeypatch.setattr(waiting, "POLL_SECONDS", 0.0)
    drawn: list[str] = []

    class Spinner:
        """rich's Status, drawing its text once per state (as its refresh would)."""

        def __init__(self, text, console):
            self.text = text

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    spinners: list[Spinner] = []

    def status(text, console):
        spinners.append(Spinner(text, console))
        return spinners[-1]

    monkeypatch.setattr(waiting, "Status", status)
    job_id = run_cli("--local", "--json", "restore", "orders", "3", "--no-wait").json()["job_id"]
    ran = run_cli("--local", "jobs", "wait", job_id, "--timeout-seconds", "0")
    assert ran.status == 1  # still SUBMITTED when the wait gives up
    [spinner] = spinners
    for seconds in (42.0, 75.0):
        now[0] = 100.0 + seconds
        console = Console(width=WIDTH, record=True)
        console.print(spinner.text)
        drawn.append(console.export_text())
    assert "SUBMITTED, 42 s" in drawn[0]
    assert "SUBMITTED, 1 min 15 s" in drawn[1]
