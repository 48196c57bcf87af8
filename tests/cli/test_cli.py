"""The snapledger CLI: every command against the local runtime, and bad arguments."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from snapledger.cli import main as cli
from snapledger.local.router import invoke
from snapledger.runtime import runtime_override
from snapledger.services.registration import register_manifest
from tests.support import make_runtime, moto_ledger, write_segments, write_snapshot


@dataclass
class InProcess:
    """The local transport's behaviour (handlers in-process) on a moto-backed runtime."""

    def invoke(self, function, payload):
        return invoke(function, payload)


@pytest.fixture
def rt(tmp_path, clock, monkeypatch):
    from snapledger.adapters.object_store_file import FileObjectStore

    for name, value in {
        "POWERTOOLS_SERVICE_NAME": "snapledger",
        "POWERTOOLS_METRICS_NAMESPACE": "Snapledger",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), clock)
        with runtime_override(runtime):
            monkeypatch.setattr(cli, "_transport", lambda args: InProcess())
            yield runtime


@pytest.fixture
def clock():
    from snapledger.clock import ManualClock

    return ManualClock()


@pytest.fixture
def seeded(rt):
    ids = []
    for lsn in (100, 200, 300):
        key = write_snapshot(rt.store, "orders", 3, lsn)
        ids.append(
            register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock).snapshot_id
        )
    write_segments(rt.store, "orders", 3, (0, 99), (100, 399))
    write_segments(rt.store, "payments", 0, (0, 49))
    return ids


def run(capsys, *argv):
    status = cli.main(["--local", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_latest_prints_a_readable_answer(seeded, capsys):
    status, out, _ = run(capsys, "latest", "orders", "3")
    assert status == 0
    assert "latest_lsn: 300" in out and seeded[2] in out


def test_json_is_the_raw_answer(seeded, capsys):
    status, out, _ = run(capsys, "--json", "latest", "orders", "3")
    assert status == 0 and json.loads(out)["head"]["latest_lsn"] == 300


def test_list_is_a_table_newest_first(seeded, capsys):
    status, out, _ = run(capsys, "list", "orders", "3", "--limit", "2")
    assert status == 0
    lines = out.splitlines()
    header = next(line for line in lines if line.strip().startswith("lsn"))
    assert "status" in header
    rows = [line for line in lines if line.strip()[:3] in ("300", "200", "100")]
    assert [r.split()[0] for r in rows] == ["300", "200"]
    assert "cursor:" in out


def test_history_lists_events(seeded, capsys):
    status, out, _ = run(capsys, "history", "orders", "3", "--after-seq", "4")
    assert status == 0 and "SnapshotRegistered" in out and "LatestAdvanced" in out


def test_restore_and_jobs(seeded, rt, capsys):
    status, out, _ = run(
        capsys, "--json", "restore", "orders", "3", "--as-of-lsn", "250", "--target-lsn", "350"
    )
    answer = json.loads(out)
    assert status == 0 and answer["partitions"][0]["base_lsn"] == 200
    status, out, _ = run(capsys, "jobs")
    assert status == 0 and answer["job_id"] in out
    status, out, _ = run(capsys, "--json", "jobs", "--job-id", answer["job_id"])
    assert json.loads(out)["job"]["state"] == "SUBMITTED"


def test_a_stream_snapshot_from_request_to_restore(seeded, rt, capsys):
    status, out, _ = run(
        capsys,
        "--json",
        "stream-snapshot",
        "orders",
        "--partitions",
        "3",
        "--min-lsn",
        "3=350",
        "--deadline-minutes",
        "10",
    )
    requested = json.loads(out)
    assert status == 0 and (requested["generation"], requested["status"]) == (1, "REQUESTED")
    assert requested["min_lsn"] == {"3": 350}
    key = write_snapshot(rt.store, "orders", 3, 360, generation=1)
    register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock, streams=rt.streams)
    status, out, _ = run(capsys, "--json", "generation", "orders")
    assert status == 0 and json.loads(out)["generation"]["status"] == "COMPLETED"
    status, out, _ = run(capsys, "generations", "orders")
    assert status == 0 and "COMPLETED" in out
    write_segments(rt.store, "orders", 3, (400, 420))
    status, out, _ = run(
        capsys, "--json", "restore-stream", "orders", "--generation", "1", "--target-lsn", "3=380"
    )
    [plan] = json.loads(out)["partitions"]
    assert status == 0 and (plan["base_lsn"], plan["target_lsn"]) == (360, 380)
    status, out, _ = run(capsys, "--json", "restore-stream", "orders", "--generation", "2")
    assert status == 1 and "no generation 2" in json.loads(out)["message"]
    status, out, _ = run(capsys, "--json", "policy", "set", "orders", "--min-generations", "3")
    assert status == 0 and json.loads(out)["policy"]["min_generations"] == 3


def test_bootstrap(seeded, rt, capsys):
    status, out, _ = run(capsys, "--json", "bootstrap", "payments", "--partitions", "0")
    assert status == 0 and json.loads(out)["partitions"][0]["target_lsn"] == 49


def test_gc_dry_run_and_gc(seeded, capsys):
    status, out, _ = run(capsys, "gc", "--dry-run")
    assert status == 0 and "latest" in out
    status, _, _ = run(capsys, "gc")
    assert status == 0


def test_hold_release_and_policy(seeded, capsys):
    status, out, _ = run(
        capsys,
        "--json",
        "hold",
        "orders",
        "3",
        seeded[0],
        "--reason",
        "audit",
        "--expires-in-hours",
        "2",
    )
    assert status == 0 and json.loads(out)["ok"]
    status, out, _ = run(capsys, "release", "orders", "3", seeded[0])
    assert status == 0
    status, out, _ = run(
        capsys, "policy", "set", "orders", "--min-count", "4", "--min-age-hours", "12"
    )
    assert status == 0
    status, out, _ = run(capsys, "--json", "policy", "get", "orders")
    assert status == 0 and json.loads(out)["policy"]["min_count"] == 4


def test_a_refusal_exits_1_with_the_reason(seeded, capsys):
    status, out, _ = run(capsys, "restore", "orders", "3", "--target-lsn", "900")
    assert (
        status == 1
        and "error (invalid_request)" in out
        and "cannot reach the target LSN 900" in out
    )
    status, out, _ = run(capsys, "latest", "nothing", "0")
    assert status == 1 and "not_found" in out


def test_policy_reset_and_the_streams_history(seeded, capsys):
    # Given a policy set by ann, then reset by bob
    status, out, _ = run(capsys, "policy", "set", "orders", "--min-count", "4", "--by", "ann")
    assert status == 0 and "outcome: set" in out
    status, out, _ = run(capsys, "--json", "policy", "reset", "orders", "--by", "bob")
    answer = json.loads(out)
    assert status == 0 and (answer["outcome"], answer["source"]) == ("reset", "default")
    # When the stream's history is asked (no partition)
    status, out, _ = run(capsys, "history", "orders")
    # Then both changes are listed in order, with who made them and what changed
    lines = [line.split() for line in out.splitlines()]
    assert status == 0 and lines[:2] == [
        ["action:", "history"],
        ["events:"],
    ], out
    assert lines[2] == ["seq", "type", "at", "version", "changed", "by"]
    assert (lines[3][:2], lines[3][-2:]) == (["1", "PolicySet"], ["min_count", "ann"])
    assert (lines[4][:2], lines[4][-1]) == (["2", "PolicyReset"], "bob")
    # and a reset on the default changes nothing
    status, out, _ = run(capsys, "policy", "reset", "orders")
    assert status == 0 and "outcome: unchanged" in out


def test_a_retried_policy_command_applies_once(seeded, capsys):
    argv = ("--json", "policy", "set", "orders", "--min-count", "4", "--request-id", "cli-1")
    first = json.loads(run(capsys, *argv)[1])
    again = json.loads(run(capsys, *argv)[1])
    assert (first["outcome"], again["outcome"]) == ("set", "duplicate")
    # and without --request-id the CLI names each command (a ULID), not the invocation
    status, out, _ = run(capsys, "--json", "policy", "set", "orders", "--min-count", "5")
    kind, _, request_id = json.loads(out)["event"]["command_id"].partition(":")
    assert status == 0 and kind == "policy-set" and len(request_id) == 26


def test_a_policy_change_on_a_stale_version_exits_1(seeded, capsys):
    run(capsys, "policy", "set", "orders", "--min-count", "4")
    status, out, _ = run(capsys, "policy", "reset", "orders", "--expected-version", "0")
    assert status == 1 and "error (conflict)" in out and "version 1, not 0" in out
    status, out, _ = run(capsys, "--json", "policy", "get", "orders")
    assert json.loads(out)["source"] == "stream"


def test_an_invalid_policy_is_refused(seeded, capsys):
    status, out, _ = run(capsys, "policy", "set", "orders", "--min-count", "0")
    assert status == 1 and "min_count" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["latest", "orders"], "the following arguments are required: partition"),
        (["latest", "orders", "-1"], "is negative"),
        (["latest", "orders", "three"], "is not a whole number"),
        (["bootstrap", "orders", "--partitions", "a,b"], "is not a list of partitions"),
        (
            ["restore", "orders", "3", "--snapshot-id", "X", "--as-of-lsn", "5"],
            "not allowed with argument",
        ),
        (["frobnicate"], "invalid choice"),
        (["policy", "reset"], "the following arguments are required: stream"),
        (["policy", "reset", "orders", "--expected-version", "-1"], "is negative"),
        (["history", "orders", "-1"], "is negative"),
        (["stream-snapshot", "orders", "--partitions", "0", "--min-lsn", "0:5"], "PARTITION=LSN"),
        (["restore-stream", "orders"], "the following arguments are required: --generation"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_deployment_says_what_to_do(capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens here
    status = cli.main(["--region", "us-east-1", "latest", "orders", "3"])
    err = capsys.readouterr().err
    assert status == 2 and "could not read the stack 'Snapledger'" in err and "--local" in err


def test_history_shows_a_changelog_file_rejected_with_its_reason(rt, capsys):
    from snapledger.local.aws_events import s3_object_created

    key = "changelog/orders/3/segment-1.parquet"
    rt.store.put(key, b"not a segment")
    invoke("track_changelog", s3_object_created(key, 13))
    status, out, _ = run(capsys, "history", "orders", "3")
    assert status == 0 and "ChangelogSegmentRejected" in out
    assert "segment-1.parquet" in out and "does not follow the changelog layout" in out
