"""Honest job feedback: wait for a job with a spinner, then say how it ended and where its
output is (or why it failed). Exit status 1 when the job did not succeed."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.status import Status

from snapledger.client.control import Answer, JobWaitTimeoutError, Snapledger
from snapledger.job_kinds import JOB_KINDS
from snapledger.layout import SNAPSHOTS, restore_prefix

#: How often the CLI asks for the job's state while it waits.
POLL_SECONDS = 2.0


def output_locations(job: dict[str, Any]) -> list[str]:
    """Where a job writes, relative to the store's root: a restore's folder per partition,
    a bootstrap's or compaction's new snapshot under its lineage."""
    partitions = [p["partition"] for p in job.get("partitions") or []]
    spec = JOB_KINDS.get(str(job.get("job_kind", job.get("kind"))))
    if spec is not None and not spec.writes_snapshot:
        return [restore_prefix(job["job_id"], p) for p in partitions]
    return [f"{SNAPSHOTS}/{job['stream']}/{p}/" for p in partitions]


def wait_for_job(
    client: Snapledger, job_id: str, console: Console, *, timeout: float
) -> tuple[Answer, int]:
    """Wait for ``job_id`` showing each state and the time waited; its record and the exit
    status (0 SUCCESS; 1 FAILED, CANCELLED or still running at ``timeout``)."""
    started = time.monotonic()
    with Status(f"job {job_id}: waiting", console=console) as status:

        def on_state(job: Answer) -> None:
            elapsed = time.monotonic() - started
            console.print(f"{elapsed:6.0f} s  {job.get('state')}")
            status.update(f"job {job_id}: {job.get('state')}")

        try:
            job = client.wait(job_id, timeout=timeout, poll=POLL_SECONDS, on_state=on_state)
        except JobWaitTimeoutError as exc:
            console.print(
                f"[yellow]{exc}[/yellow]".replace("jobs --job-id", "snapledger jobs wait")
            )
            return exc.job, 1
    elapsed = time.monotonic() - started
    return job, _report(job, console, elapsed)


def _report(job: Answer, console: Console, elapsed: float) -> int:
    state = job.get("state")
    if state == "SUCCESS":
        console.print(f"[bold green]job {job['job_id']} SUCCESS[/bold green] after {elapsed:.0f} s")
        for location in output_locations(job):
            console.print(f"  output: {location}")
        return 0
    console.print(f"[bold red]job {job['job_id']} {state}[/bold red] after {elapsed:.0f} s")
    console.print(f"  reason: {job.get('failure_reason') or '(none recorded)'}")
    return 1
