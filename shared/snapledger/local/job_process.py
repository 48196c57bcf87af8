"""A local job in a process of its own, beside the command that launched it.

With ``--local`` the launch function runs in the CLI's process; the job it starts does
not. ``JobProcesses`` (the job runner the local transport gives the functions) starts
``python -m snapledger.local.job_process`` for it, in a session of its own, its output and
Spark's own log appended to ``jobs/{run_id}.log`` in the home folder. That process runs
the job as ``snapledger local up`` does (``LocalSparkRunner`` on a local SparkSession
logging to a file) and reports its states and the manifests it wrote to the functions
through a Router, on the same DynamoDB Local and store. The CLI follows the job by asking
for its record: ``--no-wait`` returns once it is submitted, and a wait measures the job's
real time.

The DynamoDB Local is ``local up``'s when it runs. Otherwise the CLI started one, and if a
job still runs when the CLI is done (``--no-wait``, or a wait that gave up) the CLI leaves
it running and hands it over (``hand_over``): ``runtime.json`` then names the processes
using it, the jobs' and the commands' that use it meanwhile as they would ``local up``'s
(``join``; a ``jobs wait`` reading the job's end), and the last of them to end stops it
(``release``).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from snapledger.errors import JobStartError
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime, running_runtime
from snapledger.local.spark_runner import LocalSparkRunner, run_id_of
from snapledger.models.jobs import JobState
from snapledger.ports import FoundJobRun, JobRunSpec, JobRunStatus

#: The jobs' logs, in the home folder.
JOBS_FOLDER = "jobs"
#: ``runtime.json``'s key naming a DynamoDB Local handed over to job processes.
DYNAMODB_PID = "dynamodb_pid"
#: ``runtime.json``'s key naming the job processes that keep it up.
JOB_PIDS = "job_pids"


def job_log(home: Path, run_id: str) -> Path:
    """Where a local job's process writes (its output and Spark's log)."""
    return home / JOBS_FOLDER / f"{run_id}.log"


class JobProcesses:
    """A JobRunner starting each job in a process of its own (``python -m
    snapledger.local.job_process``) on the DynamoDB Local at ``endpoint``."""

    def __init__(self, home: Path, *, say: Callable[[str], None]) -> None:
        self.home = home
        #: The DynamoDB Local the jobs use (set once the runtime has started).
        self.endpoint: str | None = None
        self._say = say
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, spec: JobRunSpec) -> str:
        run_id = run_id_of(spec.job_id)
        if run_id in self._processes:
            return run_id  # like a client token: the same job starts once
        if self.endpoint is None:
            raise JobStartError("the local runtime has not started: no DynamoDB Local yet")
        ended_marker(self.home, run_id).unlink(missing_ok=True)  # an earlier start's
        command = [sys.executable, "-m", __name__, "--home", str(self.home)]
        command += ["--endpoint", self.endpoint, "--job-id", spec.job_id]
        process = spawn_job_process(self.home, run_id, command)
        self._processes[run_id] = process
        join(self.home, process.pid)
        self._say(
            f"snapledger: job {spec.job_id} runs in process {process.pid}, "
            f"its log (Spark's too) in {job_log(self.home, run_id)}"
        )
        return run_id

    def size(self, spec: JobRunSpec) -> None:
        return None  # the local session's own, whatever the input

    def status(self, run_id: str) -> JobRunStatus:
        """RUNNING while the job's process runs; SUCCESS if it exited 0; FAILED with how
        it ended otherwise (its exit status when this command started it)."""
        process = self._processes.get(run_id)
        if process is None:
            gone = ended_unreported(self.home, run_id)
            if gone is not None:
                return JobRunStatus(state=JobState.FAILED, reason=gone)
            running = alive_file(self.home, run_id).exists()
            return JobRunStatus(state=JobState.RUNNING) if running else UNKNOWN_RUN
        code = process.poll()
        if code is None:
            return JobRunStatus(state=JobState.RUNNING)
        if code == 0:
            return JobRunStatus(state=JobState.SUCCESS)
        log = job_log(self.home, run_id)
        return JobRunStatus(state=JobState.FAILED, reason=process_ended(process.pid, code, log))

    def ended_unreported(self, run_id: str) -> str | None:
        """Why the job's process is known to have ended (its exit status when this command
        started it); None while it runs, or if no job process of this home ran it."""
        process = self._processes.get(run_id)
        if process is None:
            return ended_unreported(self.home, run_id)
        code = process.poll()
        if code is None:
            return None
        return process_ended(process.pid, code, job_log(self.home, run_id))

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        """The run this command started for ``job_id``, if it did."""
        run_id = run_id_of(job_id)
        if run_id not in self._processes:
            return None
        status = self.status(run_id)
        return FoundJobRun(run_id=run_id, state=status.state, reason=status.reason)

    def running(self) -> list[int]:
        """The pids of the job processes still running."""
        return [p.pid for p in self._processes.values() if p.poll() is None]

    def hand_over(self, local: LocalRuntime) -> list[int]:
        """Leave the DynamoDB Local ``local`` started to the jobs still running, named in
        ``runtime.json`` for other commands (none: it stops with ``local``); their pids."""
        with _locked(self.home):
            running = [
                process.pid
                for run_id, process in self._processes.items()
                if process.poll() is None and not ended_marker(self.home, run_id).exists()
            ]
            engine = local.hand_over_engine() if running else None
            if engine is None or engine.pid is None:
                return []
            info = {"pid": running[0], "endpoint": engine.endpoint_url, DYNAMODB_PID: engine.pid}
            _write(self.home, {**info, JOB_PIDS: running})
        return running


UNKNOWN_RUN = JobRunStatus(state=JobState.FAILED, reason="unknown run")


def alive_file(home: Path, run_id: str) -> Path:
    """Locked (``flock``) by a job's process for as long as it lives, holding its pid: the
    kernel releases the lock however the process ends, even by SIGKILL, so another command
    can tell that it died (and a reused pid cannot fool it)."""
    return home / JOBS_FOLDER / f"{run_id}.alive"


def spawn_job_process(home: Path, run_id: str, command: list[str]) -> subprocess.Popen[bytes]:
    """Start ``command`` (a job's process, appending to its log) holding the run's
    ``alive_file`` lock: taken here before the start and handed over (``--alive-fd``), so
    it is never free while the process lives. JobStartError if another process holds it."""
    log = job_log(home, run_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(alive_file(home, run_id), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise JobStartError(
                f"the local run {run_id} already runs in another process (it holds "
                f"{alive_file(home, run_id)}): follow it with `snapledger jobs wait`"
            ) from None
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*command, "--alive-fd", str(descriptor)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(descriptor,),
                start_new_session=True,  # outlives the CLI (--no-wait), Ctrl-C is the CLI's
            )
        os.ftruncate(descriptor, 0)
        os.write(descriptor, str(process.pid).encode())
    finally:
        os.close(descriptor)  # the process holds the lock now, alone
    return process


def process_ended(pid: int | str, code: int | None, log: Path) -> str:
    """Why a job whose process ended without reporting failed: its exit code, the signal
    that killed it, or (``code`` None: another command started it) that it is gone."""
    process = f"the local job process (pid {pid})"
    if code is None:
        how = "ended (its exit status went to the command that started it)"
    elif code < 0:
        how = f"was killed by signal {-code} ({signal.Signals(-code).name})"
    else:
        how = f"exited with code {code}"
    return f"{process} {how} before reporting the job's end; its log: {log}"


def ended_unreported(home: Path, run_id: str) -> str | None:
    """Why the run's job process is gone (``process_ended``), from its ``alive_file``
    alone; None while the process holds it, or when no job process ran it here."""
    path = alive_file(home, run_id)
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its process holds it: still running
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        pid = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
    finally:
        os.close(descriptor)
    return process_ended(pid, None, job_log(home, run_id))


def ended_marker(home: Path, run_id: str) -> Path:
    """Written by a job's process when it is done with DynamoDB Local (it may still be
    exiting): a command handing its DynamoDB Local over leaves that one out."""
    return home / JOBS_FOLDER / f"{run_id}.ended"


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    """Hand-overs, joins and releases one at a time (an exclusive lock in the home)."""
    folder = home / JOBS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(home: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((home / RUNTIME_FILE).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _write(home: Path, info: dict[str, Any]) -> None:
    path = home / RUNTIME_FILE
    temporary = path.with_name(f".{RUNTIME_FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(info))
    temporary.replace(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def join(home: Path, pid: int) -> None:
    """A process using a handed-over DynamoDB Local (a job's, a command's) keeps it up
    until it ``release``s it."""
    with _locked(home):
        info = _read(home)
        if info is not None and DYNAMODB_PID in info and running_runtime(home) is not None:
            _write(home, {**info, JOB_PIDS: [*info.get(JOB_PIDS, []), pid]})


def release(home: Path, pid: int, *, run_id: str | None = None) -> None:
    """``pid`` is done with a handed-over DynamoDB Local: the next process using it keeps
    it, or it is stopped and ``runtime.json`` removed when none is left. A job's process
    (``run_id``) also leaves its ``ended_marker``, for a hand-over still to come."""
    with _locked(home):
        if run_id is not None:
            ended_marker(home, run_id).touch()
        info = _read(home)
        if info is None or DYNAMODB_PID not in info or pid not in info.get(JOB_PIDS, []):
            return
        rest = [p for p in info[JOB_PIDS] if p != pid and _alive(p)]
        if rest:
            _write(home, {**info, "pid": rest[0], JOB_PIDS: rest})
            return
        _stop(home, info)


def _stop(home: Path, info: dict[str, Any]) -> None:
    """Stop the handed-over DynamoDB Local ``info`` names and forget it."""
    (home / RUNTIME_FILE).unlink(missing_ok=True)
    with suppress(OSError):
        os.kill(int(info[DYNAMODB_PID]), signal.SIGTERM)


def stop_abandoned(home: Path) -> bool:
    """Stop a handed-over DynamoDB Local none of whose users runs any more (one died
    without releasing it), so a command can start its own on the same data; True if so."""
    if DYNAMODB_PID not in (_read(home) or {}):
        return False  # not handed over (``local up``'s, or none): nothing to lock
    with _locked(home):
        info = _read(home)
        if info is None or DYNAMODB_PID not in info:
            return False
        if any(_alive(pid) for pid in info.get(JOB_PIDS, [])):
            return False
        _stop(home, info)
        return True


def run(home: Path, endpoint: str, job_id: str) -> int:
    """Run the job ``job_id`` (recorded by its launch) to its end: 0 if it succeeded."""
    run_id = run_id_of(job_id)
    runner = LocalSparkRunner(log_file=job_log(home, run_id))
    local = LocalRuntime(home=home, endpoint=endpoint, runner=runner)
    try:
        from snapledger.local.handlers import HANDLERS
        from snapledger.local.router import Router

        runtime = local.start()
        runner.bind(Router(runtime.store, HANDLERS, runtime.layouts))
        job = runtime.jobs.get(job_id)
        if job is None:
            print(f"there is no job {job_id}", flush=True)
            return 2
        spec = JobRunSpec(
            job_id=job.job_id,
            kind=job.job_kind,
            stream=job.stream,
            root=runtime.store.uri,
            partitions=list(job.partitions),
        )
        runner.start(spec)
        runner.drain()
        status = runner.status(run_id)
        print(f"job {job_id}: {status.state} {status.reason or ''}".rstrip(), flush=True)
        return 0 if status.state == "SUCCESS" else 1
    finally:
        local.stop()
        release(home, os.getpid(), run_id=run_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m snapledger.local.job_process")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--endpoint", required=True, help="The DynamoDB Local to use.")
    parser.add_argument("--job-id", required=True)
    parser.add_argument(
        "--alive-fd", type=int, help="The locked alive_file descriptor to keep (inherited)."
    )
    args = parser.parse_args(argv)
    if args.alive_fd is not None:  # held until this process ends; Spark's JVM gets no copy
        os.set_inheritable(args.alive_fd, False)
    return run(args.home, args.endpoint, args.job_id)


if __name__ == "__main__":
    sys.exit(main())
