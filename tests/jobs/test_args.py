"""The entry point's argument schema and its one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.args import JobArgs, parse_job_args
from jobs.entrypoint import main
from jobs.errors import JobArgumentError

PREFIX = "snapshots/s/1/00000000000000000042-01KAAAAAAAAAAAAAAAAAAAAAAA/"
BASE_ARGS = ["--root", "file:///tmp/x", "--stream", "s", "--job-id", "j"]
REPO = Path(__file__).resolve().parents[2]


def test_a_full_command_line_parses_into_job_args() -> None:
    args = parse_job_args(
        [*BASE_ARGS, "--kind", "restore", "--partitions", "0-2,5", "--target-lsn", "99",
         "--base", f"1={PREFIX}", "--base", "2=none", "--epoch", "4"]
    )  # fmt: skip
    assert args == JobArgs(
        kind="restore",
        root="file:///tmp/x",
        stream="s",
        partitions=(0, 1, 2, 5),
        job_id="j",
        target_lsn=99,
        bases={1: PREFIX},
        epoch=4,
    )


def test_target_defaults_to_latest_available() -> None:
    args = parse_job_args([*BASE_ARGS, "--kind", "bootstrap", "--partitions", "0"])
    assert args.target_lsn is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--kind", "rebuild", "--partitions", "0"], "invalid choice: 'rebuild'"),
        (["--kind", "bootstrap", "--partitions", "x"], "not a partition list"),
        (["--kind", "bootstrap", "--partitions", "0", "--target-lsn", "-1"], "neither an LSN"),
        (["--kind", "bootstrap", "--partitions", "0,0"], "partitions are repeated"),
        (["--kind", "bootstrap", "--partitions", "1", "--base", f"1={PREFIX}"], "give no --base"),
        (["--kind", "compaction", "--partitions", "0,1", "--base", f"1={PREFIX}"], "none for 0"),
        (["--kind", "restore", "--partitions", "0", "--base", f"0={PREFIX}"], "is not a snapshot"),
        (["--kind", "restore", "--partitions", "0", "--base", "0"], "PARTITION=PREFIX"),
        (["--partitions", "0"], "the following arguments are required: --kind"),
    ],
)
def test_bad_arguments_raise_one_readable_line(extra, message) -> None:
    with pytest.raises(JobArgumentError, match=message) as raised:
        parse_job_args([*BASE_ARGS, *extra])
    assert "\n" not in str(raised.value)


def test_main_exits_2_with_one_line_on_bad_arguments(capsys) -> None:
    assert main([*BASE_ARGS, "--kind", "bootstrap"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_the_module_exits_non_zero_without_a_stack_trace() -> None:
    # Given a bad command line, when run as `python -m jobs.entrypoint` (no JVM is started)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jobs.entrypoint",
            *BASE_ARGS,
            "--kind",
            "nope",
            "--partitions",
            "0",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: argument --kind: invalid choice: 'nope'")


def test_the_script_form_finds_its_package() -> None:
    # spark-submit runs jobs/entrypoint.py as a script; it must still import jobs.*
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "entrypoint.py"), "--kind", "bootstrap"],
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: the following arguments are required")
