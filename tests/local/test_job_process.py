"""The DynamoDB Local a command started, handed over to the jobs still running when it is
done (issue 30): named in ``runtime.json`` for other commands, kept up while one of its
users runs, stopped by the last. Stand-in processes (``sleep``) play DynamoDB Local and
the jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from snapledger.local.job_process import (
    DYNAMODB_PID,
    JOB_PIDS,
    JobProcesses,
    ended_marker,
    join,
    release,
    stop_abandoned,
)
from snapledger.local.runtime import RUNTIME_FILE, running_runtime


@pytest.fixture
def sleepers():
    """``sleeper()``: a process that runs until the test ends (or is stopped)."""
    started: list[subprocess.Popen[bytes]] = []

    def sleeper() -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]))
        return started[-1]

    yield sleeper
    for process in started:
        process.kill()
        process.wait()


def engine(process):
    """What ``LocalRuntime.hand_over_engine`` gives: the DynamoDB Local it started."""
    return SimpleNamespace(pid=process.pid, endpoint_url="http://127.0.0.1:9")


def local(home, started):
    return SimpleNamespace(home=home, hand_over_engine=lambda: started)


def jobs_running(home, *processes):
    jobs = JobProcesses(home, say=print)
    for number, process in enumerate(processes):
        jobs._processes[f"local-{number}"] = process
    return jobs


def runtime_json(home):
    return json.loads((home / RUNTIME_FILE).read_text())


def test_the_jobs_still_running_keep_the_dynamodb_local_and_the_last_stops_it(tmp_path, sleepers):
    dynamodb, first, second = sleepers(), sleepers(), sleepers()
    jobs = jobs_running(tmp_path, first, second)

    assert jobs.hand_over(local(tmp_path, engine(dynamodb))) == [first.pid, second.pid]

    info = runtime_json(tmp_path)  # other commands use it as they would local up's
    assert (info["pid"], info[DYNAMODB_PID], info[JOB_PIDS]) == (
        first.pid,
        dynamodb.pid,
        [first.pid, second.pid],
    )
    assert running_runtime(tmp_path)["endpoint"] == "http://127.0.0.1:9"
    release(tmp_path, first.pid, run_id="local-0")
    assert runtime_json(tmp_path)["pid"] == second.pid and dynamodb.poll() is None
    join(tmp_path, os.getpid())  # a command using it meanwhile (a `jobs wait`)
    second.kill()
    second.wait()
    release(tmp_path, os.getpid())  # the last user alive: it stops DynamoDB Local
    assert dynamodb.wait(timeout=30) is not None
    assert not (tmp_path / RUNTIME_FILE).exists()


def test_a_job_that_ended_before_the_hand_over_is_left_out(tmp_path, sleepers):
    dynamodb, ending, running = sleepers(), sleepers(), sleepers()
    jobs = jobs_running(tmp_path, ending, running)
    release(tmp_path, ending.pid, run_id="local-0")  # done with it, still exiting

    assert ended_marker(tmp_path, "local-0").exists()
    assert jobs.hand_over(local(tmp_path, engine(dynamodb))) == [running.pid]


def test_no_job_running_hands_nothing_over(tmp_path, sleepers):
    dynamodb = sleepers()
    handed: list[object] = []
    stopping = SimpleNamespace(home=tmp_path, hand_over_engine=lambda: handed.append(1))

    assert jobs_running(tmp_path).hand_over(stopping) == []
    assert handed == [] and not (tmp_path / RUNTIME_FILE).exists()
    release(tmp_path, dynamodb.pid)  # not handed over: nothing to do
    assert dynamodb.poll() is None


def test_a_jobs_state_is_its_processes(tmp_path):
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    failed = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    done.wait(), failed.wait()
    jobs = jobs_running(tmp_path, done, failed)

    assert jobs.status("local-0").state == "SUCCESS"
    state = jobs.status("local-1")
    assert state.state == "FAILED" and str(tmp_path / "jobs" / "local-1.log") in state.reason
    assert jobs.status("local-9").reason == "unknown run"


def test_a_dynamodb_local_whose_users_all_died_is_stopped_by_the_next_command(tmp_path, sleepers):
    dynamodb, job = sleepers(), sleepers()
    jobs_running(tmp_path, job).hand_over(local(tmp_path, engine(dynamodb)))
    assert not stop_abandoned(tmp_path)  # its job still runs
    job.kill()
    job.wait()  # died without releasing it

    assert stop_abandoned(tmp_path)
    assert dynamodb.wait(timeout=30) is not None
    assert not (tmp_path / RUNTIME_FILE).exists()
