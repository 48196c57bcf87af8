"""The snapledger CLI: every command against the functions in-process (moto), bad arguments,
--json anywhere, --version, completion, help on every option, readable refusals."""

from __future__ import annotations

import click
import pytest

from snapledger.cli import app as cli_app
from snapledger.cli import main as cli
from snapledger.cli.refusals import readable_fields
from snapledger.cli.render import make_console, render
from snapledger.local.handlers import invoke
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.cli.conftest import InProcess
from tests.cli.support import run_cli
from tests.support import write_segments, write_snapshot


def run(*argv, input=None):
    ran = run_cli("--local", *argv, input=input)
    return ran.status, ran.out, ran.err


def line_with(out: str, *words: str) -> str:
    """The one line of ``out`` holding every word (a table's row)."""
    [line] = [line for line in out.splitlines() if all(w in line.split() for w in words)]
    return line


def test_latest_prints_a_readable_answer(seeded):
    status, out, _ = run("latest", "orders", "3")
    assert status == 0
    assert line_with(out, "latest_lsn", "300") and line_with(out, "latest_snapshot_id", seeded[2])


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "latest", "orders", "3"],
        ["latest", "--json", "orders", "3"],
        ["latest", "orders", "3", "--json"],
    ],
)
def test_json_is_the_raw_answer_wherever_it_is_given(seeded, argv):
    status, out, _ = run(*argv)
    import json

    assert status == 0 and json.loads(out)["head"]["latest_lsn"] == 300


def test_json_after_a_nested_command(seeded):
    ran = run_cli("--local", "policy", "get", "orders", "--json")
    assert ran.status == 0 and ran.json()["policy"]["min_count"] == 3


def test_list_is_a_table_newest_first(seeded):
    status, out, _ = run("list", "orders", "3", "--limit", "2")
    assert status == 0
    lines = out.splitlines()
    header = next(line for line in lines if line.split()[:2] == ["lsn", "snapshot_id"])
    assert "status" in header.split()
    rows = [line.split()[0] for line in lines if line.split()[:1] in (["300"], ["200"], ["100"])]
    assert rows == ["300", "200"]
    assert "cursor:" in out


def test_history_lists_events(seeded):
    status, out, _ = run("history", "orders", "3", "--after-seq", "4")
    assert status == 0 and "SnapshotRegistered" in out and "LatestAdvanced" in out


def test_restore_without_waiting_and_jobs(seeded, rt):
    status, out, _ = run(
        "--json", "restore", "orders", "3", "--as-of-lsn", "250", "--target-lsn", "350"
    )
    import json

    answer = json.loads(out)
    assert status == 0 and answer["partitions"][0]["base_lsn"] == 200
    assert answer["state"] == "SUBMITTED" and "job" not in answer  # not a terminal: no wait
    status, out, _ = run("jobs")
    assert status == 0 and answer["job_id"] in out
    status, out, _ = run("--json", "jobs", "--job-id", answer["job_id"])
    assert json.loads(out)["job"]["state"] == "SUBMITTED"
    status, out, _ = run("jobs", "show", answer["job_id"], "--json")
    assert json.loads(out)["job"]["job_id"] == answer["job_id"]


def test_a_stream_snapshot_from_request_to_restore(seeded, rt):
    ran = run_cli(
        "--local",
        "stream-snapshot",
        "orders",
        "--partitions",
        "3",
        "--min-lsn",
        "3=350",
        "--deadline-minutes",
        "10",
        "--json",
    )
    requested = ran.json()
    assert ran.status == 0 and (requested["generation"], requested["status"]) == (1, "REQUESTED")
    assert requested["min_lsn"] == {"3": 350}
    key = write_snapshot(rt.store, "orders", 3, 360, generation=1)
    register_manifest(
        key,
        ledger=rt.ledger,
        store=rt.store,
        clock=rt.clock,
        streams=rt.streams,
        layouts=NATIVE_ONLY,
    )
    ran = run_cli("--local", "--json", "generation", "orders")
    assert ran.status == 0 and ran.json()["generation"]["status"] == "COMPLETED"
    status, out, _ = run("generations", "orders")
    assert status == 0 and "COMPLETED" in out
    write_segments(rt.store, "orders", 3, (400, 420))
    ran = run_cli(
        "--local",
        "--json",
        "restore-stream",
        "orders",
        "--generation",
        "1",
        "--target-lsn",
        "3=380",
    )
    [plan] = ran.json()["partitions"]
    assert ran.status == 0 and (plan["base_lsn"], plan["target_lsn"]) == (360, 380)
    ran = run_cli("--local", "--json", "restore-stream", "orders", "--generation", "2")
    assert ran.status == 1 and "no generation 2" in ran.json()["message"]
    ran = run_cli("--local", "--json", "policy", "set", "orders", "--min-generations", "3")
    assert ran.status == 0 and ran.json()["policy"]["min_generations"] == 3


def test_bootstrap(seeded, rt):
    ran = run_cli("--local", "--json", "bootstrap", "payments", "--partitions", "0")
    assert ran.status == 0 and ran.json()["partitions"][0]["target_lsn"] == 49


def test_hold_release_and_policy(seeded):
    status, out, _ = run(
        "--json", "hold", "orders", "3", seeded[0], "--reason", "audit", "--expires-in-hours", "2"
    )
    assert status == 0 and '"ok": true' in out
    status, out, _ = run("release", "orders", "3", seeded[0], "--yes")
    assert status == 0 and line_with(out, "snapshot_id:", seeded[0])
    status, out, _ = run("policy", "set", "orders", "--min-count", "4", "--min-age-hours", "48")
    assert status == 0
    ran = run_cli("--local", "--json", "policy", "get", "orders")
    assert ran.status == 0 and ran.json()["policy"]["min_count"] == 4


def test_a_refusal_exits_1_with_the_reason(seeded):
    status, out, _ = run("restore", "orders", "3", "--target-lsn", "900")
    assert status == 1 and "error (invalid_request)" in out
    assert "cannot reach the target LSN 900" in out
    status, out, _ = run("latest", "nothing", "0")
    assert status == 1 and "error (not_found)" in out


def test_not_found_answers_suggest_cli_commands_not_console_payloads(seeded):
    status, out, _ = run("jobs", "--job-id", "nope")
    assert status == 1 and "there is no job nope: list jobs with `snapledger jobs`" in out
    assert '{"action"' not in out
    status, out, _ = run("generation", "nothing")
    assert status == 1
    assert "request one with `snapledger stream-snapshot nothing --partitions 0,1,...`" in out
    # --json stays the functions' answer, as the console shows it
    ran = run_cli("--local", "--json", "jobs", "--job-id", "nope")
    assert '{"action": "jobs"}' in ran.json()["message"]


def test_policy_reset_and_the_streams_history(seeded):
    # Given a policy set by ann, then reset by bob
    status, out, _ = run("policy", "set", "orders", "--min-count", "4", "--by", "ann")
    assert status == 0 and line_with(out, "outcome:", "set")
    ran = run_cli("--local", "--json", "policy", "reset", "orders", "--by", "bob")
    assert ran.status == 0 and (ran.json()["outcome"], ran.json()["source"]) == (
        "reset",
        "default",
    )
    # When the stream's history is asked (no partition)
    status, out, _ = run("history", "orders")
    # Then both changes are listed in order, with who made them and what changed
    lines = [line.split() for line in out.splitlines()]
    assert status == 0 and lines[:2] == [["action:", "history"], ["events:"]], out
    assert lines[2] == ["seq", "type", "at", "version", "changed", "by"]
    assert (lines[3][:2], lines[3][-2:]) == (["1", "PolicySet"], ["min_count", "ann"])
    assert (lines[4][:2], lines[4][-1]) == (["2", "PolicyReset"], "bob")
    # and a reset on the default changes nothing
    status, out, _ = run("policy", "reset", "orders")
    assert status == 0 and line_with(out, "outcome:", "unchanged")


def test_a_retried_policy_command_applies_once(seeded):
    argv = ("--json", "policy", "set", "orders", "--min-count", "4", "--request-id", "cli-1")
    first, again = run_cli("--local", *argv).json(), run_cli("--local", *argv).json()
    assert (first["outcome"], again["outcome"]) == ("set", "duplicate")
    # and without --request-id the CLI names each command (a ULID), not the invocation
    ran = run_cli("--local", "--json", "policy", "set", "orders", "--min-count", "5")
    kind, _, request_id = ran.json()["event"]["command_id"].partition(":")
    assert ran.status == 0 and kind == "policy-set" and len(request_id) == 26


def test_a_policy_change_on_a_stale_version_exits_1(seeded):
    run("policy", "set", "orders", "--min-count", "4")
    status, out, _ = run("policy", "reset", "orders", "--expected-version", "0")
    assert status == 1 and "error (conflict)" in out and "version 1, not 0" in out
    assert run_cli("--local", "--json", "policy", "get", "orders").json()["source"] == "stream"


def test_a_policy_number_below_its_bound_is_refused_by_the_cli_itself_exit_2(seeded):
    # --min-count 0 is refused as click parses it (issue 30: before any prompt or request),
    # named as the user typed it and with the accepted range in words
    status, out, err = run("policy", "set", "orders", "--min-count", "0", "--yes")
    assert status == 2 and out == "" and "--min-count" in err
    assert "a whole number from 1 to" in err


def test_a_bad_time_is_one_line_listing_the_accepted_forms(seeded):
    status, out, err = run("restore", "orders", "3", "--as-of-time", "yesterday")
    assert status == 2 and out == ""
    [error] = [line for line in err.splitlines() if line.startswith("Error")]
    assert "'yesterday' is not a time: use ISO-8601 with a timezone" in error
    assert "2026-05-01T12:00Z" in error and "validation" not in err
    status, _, err = run("restore", "orders", "3", "--as-of-time", "2026-05-01T12:00")
    assert status == 2 and "has no timezone" in err


def test_a_union_refusal_becomes_one_line_with_the_accepted_forms(seeded):
    # Given the launch function's answer to a base it cannot parse (one error per union branch)
    answer = InProcess().invoke(
        "launch",
        {"action": "restore", "stream": "orders", "partition": 3, "from": {"time": "yesterday"}},
    )
    assert len(answer["fields"]) > 3
    # Then the CLI shows the field once, with the forms it accepts
    [(field, problem)] = readable_fields(answer["fields"])
    assert field == "from" and "--as-of-time" in problem and "--snapshot-id" in problem
    console = make_console()
    with console.capture() as captured:
        console.print(render(answer))
    assert "FromSnapshotId" not in captured.get() and "literal[" not in captured.get()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["latest", "orders"], "Missing argument 'PARTITION'"),
        (["latest", "orders", "-1"], "No such option: -1"),
        (["latest", "orders", "--", "-1"], "-1 is negative: use 0 or more"),
        (["latest", "orders", "three"], "is not a whole number"),
        (["bootstrap", "orders", "--partitions", "a,b"], "is not a list of partitions"),
        (
            ["restore", "orders", "3", "--snapshot-id", "X", "--as-of-lsn", "5"],
            "choose one base: the latest (no option), --snapshot-id ID, --as-of-lsn LSN",
        ),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["policy", "reset"], "Missing argument 'STREAM'"),
        (["policy", "reset", "orders", "--expected-version", "-1"], "is negative"),
        (["history", "orders", "--", "-1"], "is negative"),
        (["stream-snapshot", "orders", "--partitions", "0", "--min-lsn", "0:5"], "PARTITION=LSN"),
        (["restore-stream", "orders"], "Missing option '--generation'"),
        (["latest", "orders", "3", "--jsn"], "No such option: --jsn"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, monkeypatch):
    monkeypatch.setattr(cli_app, "_transport", lambda options: pytest.fail("nothing is sent"))
    ran = run_cli(*argv)
    assert ran.status == 2 and message in ran.err, ran.err


def test_main_returns_the_exit_status(seeded, capsys):
    # the console script (snapledger.cli.main:main) exits with the command's status
    assert cli.main(["--local", "latest", "orders", "3"]) == 0
    assert cli.main(["--local", "latest", "nothing", "0"]) == 1
    assert cli.main(["--local", "latest", "orders", "x"]) == 2
    assert cli.main(["--version"]) == 0
    assert "snapledger, version 0.1.0" in capsys.readouterr().out


def test_an_unreachable_deployment_says_what_to_do(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens here
    ran = run_cli("--region", "us-east-1", "latest", "orders", "3")
    assert ran.status == 2 and "could not read the stack 'Snapledger'" in ran.err
    assert "--local" in ran.err


def test_history_shows_a_changelog_file_rejected_with_its_reason(rt):
    from snapledger.local.aws_events import s3_object_created

    key = "changelog/orders/3/segment-1.parquet"
    rt.store.put(key, b"not a segment")
    invoke("track_changelog", s3_object_created(key, 13))
    status, out, _ = run("history", "orders", "3")
    assert status == 0 and "ChangelogSegmentRejected" in out
    assert "segment-1.parquet" in out and "does not follow the changelog layout" in out


def test_version():
    ran = run_cli("--version")
    assert ran.status == 0 and ran.out.strip() == "snapledger, version 0.1.0"


def test_shell_completion_is_clicks(monkeypatch):
    # The script README tells people to eval
    monkeypatch.setenv("_SNAPLEDGER_COMPLETE", "bash_source")
    with pytest.raises(SystemExit) as done:
        cli.cli.main([], prog_name="snapledger")
    assert done.value.code == 0
    # and what it completes: the commands, then a command's options
    monkeypatch.setenv("_SNAPLEDGER_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "snapledger res")
    monkeypatch.setenv("COMP_CWORD", "1")
    ran = CliRunnerCompletion.complete()
    assert {"restore", "restore-stream"} <= ran
    monkeypatch.setenv("COMP_WORDS", "snapledger gc --")
    monkeypatch.setenv("COMP_CWORD", "2")
    assert {"--dry-run", "--stream", "--yes", "--json"} <= CliRunnerCompletion.complete()


class CliRunnerCompletion:
    @staticmethod
    def complete() -> set[str]:
        from click.testing import CliRunner

        result = CliRunner().invoke(cli.cli, [], prog_name="snapledger")
        return {line.split(",", 1)[1] for line in result.stdout.splitlines() if "," in line}


def _commands(group: click.Group, path=()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


@pytest.mark.parametrize(
    ("path", "command"),
    list(_commands(cli.cli)),
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_every_command_and_option_has_help(path, command):
    assert command.help, path
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, (path, param.name)
    ran = run_cli(*path, "--help")
    assert ran.status == 0 and ("--json" in ran.out or path[0] == "local")


def test_timeline_draws_the_lineage_to_the_file_it_names(seeded, tmp_path):
    target = tmp_path / "orders-3.html"
    status, out, _ = run("timeline", "orders", "3", "-o", str(target))
    assert status == 0 and f"drew orders/3 to {target}" in out
    page = target.read_text()
    assert page.startswith("<!doctype html>") and page.count('class="snapshot') == len(seeded)
    assert page.count(" latest") >= 1  # the latest is marked
    status, out, _ = run("timeline", "orders", "3", "-o", str(tmp_path / "t.png"))
    assert status == 0 and (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")
    status, _, err = run("timeline", "orders", "3", "-o", str(tmp_path / "t.pdf"))
    assert status == 2 and "a picture is written as .svg or .png or .html" in err


def test_gc_dry_run_plots_the_plan(seeded, tmp_path):
    target = tmp_path / "plan.svg"
    status, out, err = run("gc", "--dry-run", "--plot", str(target))
    assert status == 0 and f"drew the plan to {target}" in out + err
    svg = target.read_text()
    assert svg.count('class="plan-keep"') == len(seeded)  # all young: every one kept
    status, _, err = run("gc", "--plot", str(target), "--yes")
    assert status == 2 and "draws a plan: give it with --dry-run" in err


def test_jobs_show_reads_the_resources_a_run_was_sized_with():
    worker = {"vcpu": 4, "memory_gb": 16, "disk_gb": 40}
    answer = {
        "job": {
            "job_id": "restore-1",
            "state": "SUBMITTED",
            "resources": {
                "driver": {"vcpu": 1, "memory_gb": 4, "disk_gb": 20},
                "executor": worker,
                "executors": 3,
                "shuffle_partitions": 12,
            },
        }
    }
    console = make_console()
    with console.capture() as captured:
        console.print(render(answer))
    out = captured.get()
    assert line_with(out, "executors", "3") and line_with(out, "shuffle_partitions", "12")
    assert line_with(out, "memory_gb", "16") and line_with(out, "disk_gb", "40")
    assert "{" not in out  # nested tables, no JSON in a cell
