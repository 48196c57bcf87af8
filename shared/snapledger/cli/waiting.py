"""Honest job feedback: wait for a job with a spinner, then say how it ended and where its
output is (or why it failed). Exit status 1 when the job did not succeed."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.status import Status

from snapledger.client.control import Answer, JobWaitTimeoutError, Snapledger
from snapledger.job_kinds import JOB_KIND_NAMES, JOB_KINDS, JobKind
from snapledger.layout import SNAPSHOTS, restore_prefix
from snapledger.models.jobs import TERMINAL_STATES

#: How often the CLI asks for the job's state while it waits.
POLL_SECONDS = 2.0
#: The clock elapsed times are read from (a test gives its own).
clock = time.monotonic


def elapsed(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``."""
    whole = max(0, round(seconds))
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


class Waiting:
    """The spinner's text: the job, its state and the time waited, read as it is drawn
    (the spinner redraws it several times a second)."""

    def __init__(self, job_id: str, started: float) -> None:
        self.job_id, self.started, self.state = job_id, started, "waiting"

    def __rich__(self) -> str:
        return f"job {self.job_id}: {self.state}, {elapsed(clock() - self.started)}"


def output_locations(job: dict[str, Any]) -> list[str]:
    """Where a job writes, relative to the store's root: a restore's folder per partition,
    a bootstrap's or compaction's new snapshot under its lineage."""
    partitions = [p["partition"] for p in job.get("partitions") or []]
    kind = str(job.get("job_kind", job.get("kind")))
    spec = JOB_KINDS[JobKind(kind)] if kind in JOB_KIND_NAMES else None
    if spec is not None and not spec.writes_snapshot:
        return [restore_prefix(job["job_id"], p) for p in partitions]
    return [f"{SNAPSHOTS}/{job['stream']}/{p}/" for p in partitions]


def wait_for_job(
    client: Snapledger, job_id: str, console: Console, *, timeout: float
) -> tuple[Answer, int]:
    """Wait for ``job_id`` showing each state and the time waited; its record and the exit
    status (0 SUCCESS; 1 FAILED, CANCELLED or still running at ``timeout``)."""
    started = clock()
    waiting = Waiting(job_id, started)
    with Status(waiting, console=console):

        def on_state(job: Answer) -> None:
            waiting.state = str(job.get("state"))
            if waiting.state not in TERMINAL_STATES:  # the last, once, by _report
                console.print(f"{clock() - started:6.0f} s  {waiting.state}")

        try:
            job = client.wait(job_id, timeout=timeout, poll=POLL_SECONDS, on_state=on_state)
        except JobWaitTimeoutError as exc:
            console.print(
                f"[yellow]{exc}[/yellow]".replace("jobs --job-id", "snapledger jobs wait")
            )
            return exc.job, 1
    return job, _report(job, console, elapsed(clock() - started))


def _report(job: Answer, console: Console, waited: str) -> int:
    state = job.get("state")
    if state == "SUCCESS":
        console.print(f"[bold green]job {job['job_id']} SUCCESS[/bold green] after {waited}")
        for location in output_locations(job):
            console.print(f"  output: {location}")
        return 0
    console.print(f"[bold red]job {job['job_id']} {state}[/bold red] after {waited}")
    console.print(f"  reason: {job.get('failure_reason') or '(none recorded)'}")
    return 1
