"""The DynamoDB Local a command started, handed over to the jobs still running when it is
done (issue 30): named in ``runtime.json`` for other commands, kept up while one of its
users runs, stopped by the last. Stand-in processes (``sleep``) play DynamoDB Local and
the jobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import pytest

from snapledger.errors import JobStartError
from snapledger.local.job_process import (
    DYNAMODB_PID,
    JOB_PIDS,
    JobProcesses,
    ended_marker,
    join,
    release,
    spawn_job_process,
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


SLEEPING_JOB = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_a_job_process_killed_mid_job_is_failed_with_the_signal_by_its_starter(tmp_path):
    # Given a job's process started as JobProcesses starts one, still running
    process = spawn_job_process(tmp_path, "local-0", SLEEPING_JOB)
    jobs = jobs_running(tmp_path, process)
    other = JobProcesses(tmp_path, say=print)  # another command: a later `jobs wait`
    try:
        assert (
            jobs.status("local-0").state == "RUNNING" and jobs.ended_unreported("local-0") is None
        )
        assert other.status("local-0").state == "RUNNING"
        assert other.ended_unreported("local-0") is None
        with pytest.raises(JobStartError, match="already runs in another process"):
            spawn_job_process(tmp_path, "local-0", SLEEPING_JOB)
    finally:
        # When it is killed mid-job, before it reports
        process.send_signal(signal.SIGKILL)
        process.wait()

    # Then the command that started it says which signal, and another that it is gone
    log = tmp_path / "jobs" / "local-0.log"
    killed = jobs.status("local-0")
    assert killed.state == "FAILED", killed
    assert killed.reason == (
        f"the local job process (pid {process.pid}) was killed by signal 9 (SIGKILL) before "
        f"reporting the job's end; its log: {log}"
    )
    assert jobs.ended_unreported("local-0") == killed.reason
    gone = other.status("local-0")
    assert gone.state == "FAILED" and f"(pid {process.pid}) ended (its exit status" in gone.reason
    assert other.ended_unreported("local-0") == gone.reason


def test_a_job_process_that_exits_before_reporting_is_failed_with_its_code(tmp_path):
    process = spawn_job_process(tmp_path, "local-0", [sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()

    reason = jobs_running(tmp_path, process).ended_unreported("local-0")

    assert reason is not None and f"(pid {process.pid}) exited with code 3 before" in reason


def test_a_run_no_job_process_of_this_home_ran_is_unknown(tmp_path):
    other = JobProcesses(tmp_path, say=print)
    assert other.ended_unreported("local-9") is None
    assert other.status("local-9").reason == "unknown run"
