"""The KTable checkpointer's ``--local`` command from docs/kafka-streams.md, run as written (only
the broker's address replaced, the local runtime's home given by SNAPLEDGER_LOCAL_HOME)
against the session's broker, with no ``snapledger local up`` running: each checkpoint is
registered by the command itself, and a second run starts from them, reading only the new
records. And its errors: one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.ktable_checkpointer.__main__ import PROG, main
from snapledger.client import Snapledger
from snapledger.local import kafka_topics
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.test_ktable_checkpointer import InProcess, puts_and_deletes, replay

REPO = Path(__file__).resolve().parents[2]
#: The broker address the doc's --local line names.
DOC_BROKER = "127.0.0.1:9092"
#: The topic the doc's lines name.
DOC_TOPIC = "prices"


def doc_local_line() -> str:
    """The section's command line with ``--local``, its continuation lines joined."""
    doc = (REPO / "docs" / "kafka-streams.md").read_text()
    section = doc.split("## The KTable checkpointer", 1)[1]
    block = section.split("```\n", 2)[1]
    commands = block.replace("\\\n", " ").splitlines()
    [line] = [c for c in commands if "--local" in c]
    return " ".join(line.split())


def run_line(line: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``line`` run by a shell in the checkout, ``python`` being this environment's."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "SNAPLEDGER_LOCAL_HOME": str(home)}
    return subprocess.run(
        ["bash", "-c", line],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def said(ran: subprocess.CompletedProcess[str]) -> str:
    return f"exit {ran.returncode}\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"


@pytest.mark.kafka
@pytest.mark.ddblocal
@pytest.mark.slow
def test_the_documented_local_command_registers_and_a_second_run_reads_only_the_new_records(
    kafka_broker: KafkaBroker, tmp_path: Path
):
    line = doc_local_line()
    assert DOC_BROKER in line and f"--topic {DOC_TOPIC}" in line, line
    line = line.replace(DOC_BROKER, kafka_broker.bootstrap_servers)
    servers = kafka_broker.bootstrap_servers
    kafka_topics.create_topics(
        servers, [DOC_TOPIC], partitions=2, config={"cleanup.policy": "compact"}
    )
    kafka_topics.produce(servers, DOC_TOPIC, puts_and_deletes(0, 40, keys=9))
    home = tmp_path / "home"  # no `snapledger local up` runs for it

    first = run_line(line, home)

    assert first.returncode == 0, said(first)
    assert "Traceback" not in first.stderr, said(first)
    assert "records_read=40\n" in first.stdout, said(first)
    assert first.stdout.count("from beginning") == 2, said(first)
    # the command registered its own checkpoints (one per partition)
    assert first.stdout.count(" registered: became_latest\n") == 2, said(first)
    assert (home / "root" / "snapshots" / DOC_TOPIC).is_dir()  # the local runtime's store

    # When more records arrive and the same line runs again
    kafka_topics.produce(servers, DOC_TOPIC, puts_and_deletes(40, 12, keys=9))
    second = run_line(line, home)

    # Then each partition starts from its checkpoint and only the 12 new records are read
    assert second.returncode == 0, said(second)
    assert second.stdout.count("from checkpoint ") == 2, said(second)
    assert "records_read=12\n" in second.stdout, said(second)
    assert f"keys={len(replay(servers, DOC_TOPIC))}\n" in second.stdout, said(second)
    assert second.stdout.count(" registered: became_latest\n") == 2, said(second)


@pytest.mark.ddblocal
@pytest.mark.slow
def test_a_root_other_than_the_local_store_with_local_is_one_clear_error(tmp_path: Path):
    elsewhere = (tmp_path / "elsewhere").as_uri()
    line = f"{doc_local_line()} --root {elsewhere}"

    ran = run_line(line, tmp_path / "home")

    assert ran.returncode == 2, said(ran)
    assert ran.stdout == "", said(ran)
    [error] = [e for e in ran.stderr.splitlines() if e.startswith(f"{PROG}: error:")]
    assert f"--root {elsewhere} is not the local runtime's store" in error, said(ran)
    assert (tmp_path / "home" / "root").as_uri() in error and "leave --root out" in error
    assert "Traceback" not in ran.stderr, said(ran)
    assert not (tmp_path / "elsewhere").exists()


def test_local_and_stack_together_are_one_clear_error(capsys):
    argv = ["--topic", "t", "--bootstrap-servers", "x:1", "--local", "--stack", "Other"]
    assert main(argv) == 2
    ran = capsys.readouterr()
    assert ran.out == ""
    assert ran.err == (
        f"{PROG}: error: --local and --stack name two registries: give --local (the local "
        "runtime) or --stack NAME (a deployment), not both\n"
    )


def test_without_local_the_root_is_required_in_one_line(capsys):
    assert main(["--topic", "t", "--bootstrap-servers", "x:1", "--once"]) == 2
    ran = capsys.readouterr()
    assert ran.out == ""
    assert ran.err == (
        f"{PROG}: error: --root s3://bucket[/prefix] (or file:///dir) is required without --local\n"
    )


def test_a_number_out_of_its_bounds_is_one_line_naming_the_option(capsys):
    argv = ["--topic", "t", "--bootstrap-servers", "x:1", "--root", "file:///tmp/x"]
    assert main([*argv, "--every-records", "0"], registry=Snapledger(InProcess())) == 2
    ran = capsys.readouterr()
    assert ran.out == ""
    assert ran.err.count("\n") == 1
    assert ran.err.startswith(f"{PROG}: error: every_records must be a number from 1 to ")
