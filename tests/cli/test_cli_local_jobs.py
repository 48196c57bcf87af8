"""``--local`` jobs run beside the CLI (issue 30): in a process of their own with their log
in a file, ``--no-wait`` answers while the job has not ended, and a wait reports the final
state once, with the time waited; the CLI's stdout gets no Spark line."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from contextlib import suppress
from pathlib import Path

import pytest

from snapledger.cli import main as cli
from snapledger.local.job_process import DYNAMODB_PID, JOB_PIDS
from snapledger.local.runtime import RUNTIME_FILE

pytestmark = [pytest.mark.ddblocal, pytest.mark.spark, pytest.mark.slow]

#: What a line of Spark's log (log4j's pattern, or its JVM's warnings) looks like.
SPARK_LINE = re.compile(r"\b(INFO|WARN|ERROR)\b .*:|SparkContext|log4j|WARNING: Using incubator")


@pytest.fixture
def home(tmp_path, spark):
    """A local home whose root holds a changelog of orders/0 (written with the shared
    session); afterwards, any process the test's commands left running is stopped."""
    from jobs.changelog_gen import generate_changelog

    folder = tmp_path / "home"
    (folder / "root").mkdir(parents=True)
    generate_changelog(spark, (folder / "root").as_uri(), "orders", partitions=1, rows=2_000)
    yield folder
    for pid in _left_running(folder):
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _left_running(folder: Path) -> list[int]:
    try:
        info = json.loads((folder / RUNTIME_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [*info.get(JOB_PIDS, []), *([info[DYNAMODB_PID]] if DYNAMODB_PID in info else [])]


def _stopped(folder: Path, seconds: float = 120.0) -> bool:
    """Whether the handed-over DynamoDB Local was stopped (``runtime.json`` removed)."""
    deadline = time.monotonic() + seconds
    while (folder / RUNTIME_FILE).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not (folder / RUNTIME_FILE).exists()


def test_no_wait_answers_before_the_job_ends_and_a_wait_says_its_end_once(home, capsys):
    bootstrap = ["--local", "--home", str(home), "--json", "bootstrap", "orders"]
    status = cli.main([*bootstrap, "--partitions", "0", "--no-wait"])
    ran = capsys.readouterr()
    assert status == 0, ran
    answer = json.loads(ran.out)  # one JSON document: no Spark line before or after it
    # The job had not ended when the CLI answered: it runs in a process of its own
    assert answer["state"] in ("SUBMITTED", "RUNNING"), answer
    [log] = re.findall(r"its log \(Spark's too\) in (\S+)", ran.err)
    assert Path(log).parent == home / "jobs"
    info = json.loads((home / RUNTIME_FILE).read_text())  # its DynamoDB Local, handed over
    assert info[JOB_PIDS] and info[JOB_PIDS][0] != os.getpid()

    status = cli.main(["--local", "--home", str(home), "jobs", "wait", answer["job_id"]])
    waited = capsys.readouterr()

    assert status == 0, waited
    assert waited.out.count("SUCCESS") == 1, waited.out  # the final state, once
    # the facts (its id, its state), not the duration's format: a loaded machine takes minutes
    assert f"job {answer['job_id']} SUCCESS after " in waited.out, waited.out
    assert "output: snapshots/orders/0/" in waited.out
    for out in (ran.out, waited.out):
        assert not SPARK_LINE.search(out), out
    # the last process using the handed-over DynamoDB Local stopped it; its last line (the
    # job's end) is in its log by then: the ledger may say SUCCESS before the line is printed
    assert _stopped(home), (home / RUNTIME_FILE).read_text()
    spark_log = Path(log).read_text()
    assert SPARK_LINE.search(spark_log) and f"job {answer['job_id']}: SUCCESS" in spark_log


def test_a_wait_follows_the_job_and_says_its_real_end_once(home, capsys):
    bootstrap = ["--local", "--home", str(home), "bootstrap", "orders", "--partitions", "0"]
    status = cli.main([*bootstrap, "--wait"])
    ran = capsys.readouterr()

    assert status == 0, ran
    assert "state: SUBMITTED" in ran.out  # the launch's answer, then the job's states
    states = re.findall(r"^\s*\d+ s  (\w+)$", ran.out, re.MULTILINE)
    assert "SUCCESS" not in states and ran.out.count("SUCCESS") == 1, ran.out
    [job_id] = re.findall(r"job_id: (\S+)", ran.out)
    assert f"job {job_id} SUCCESS after " in ran.out, ran.out  # not the duration's format
    assert not SPARK_LINE.search(ran.out), ran.out
    assert list((home / "jobs").glob("*.log"))
    assert _stopped(home)


def _kill_the_job_process_once_started(folder: Path) -> threading.Thread:
    """SIGKILL the job's process mid-job, once it runs (its alive file names its pid)."""

    def kill() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            for alive in (folder / "jobs").glob("*.alive"):
                pid = alive.read_text().strip()
                if pid:
                    time.sleep(1.0)  # into its start: DynamoDB Local, then Spark
                    os.kill(int(pid), signal.SIGKILL)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer


def test_a_job_whose_process_is_killed_ends_failed_with_the_signal(home, capsys):
    killer = _kill_the_job_process_once_started(home)
    bootstrap = ["--local", "--home", str(home), "bootstrap", "orders", "--partitions", "0"]
    status = cli.main([*bootstrap, "--wait", "--timeout-seconds", "300"])
    ran = capsys.readouterr()
    killer.join()

    assert status == 1, ran
    said = " ".join(ran.out.split())
    [job_id] = re.findall(r"job_id: (\S+)", said)
    assert f"job {job_id} FAILED after " in said, said  # not the duration's format
    assert re.search(r"the local job process \(pid \d+\) was killed by signal 9 \(SIGKILL\)", said)
    assert "before reporting the job's end" in said


def test_a_job_killed_after_a_no_wait_is_found_failed_by_jobs_wait(home, capsys):
    bootstrap = ["--local", "--home", str(home), "--json", "bootstrap", "orders"]
    status = cli.main([*bootstrap, "--partitions", "0", "--no-wait"])
    ran = capsys.readouterr()
    assert status == 0, ran
    job_id = json.loads(ran.out)["job_id"]
    [pid] = re.findall(r"runs in process (\d+)", ran.err)
    os.kill(int(pid), signal.SIGKILL)  # mid-job: it had not reported its end

    wait = ["--local", "--home", str(home), "jobs", "wait", job_id, "--timeout-seconds", "120"]
    status = cli.main(wait)
    waited = capsys.readouterr()

    assert status == 1, waited
    said = " ".join(waited.out.split())
    assert f"job {job_id} FAILED" in said
    assert f"the local job process (pid {pid}) ended" in said
    assert "before reporting the job's end" in said
