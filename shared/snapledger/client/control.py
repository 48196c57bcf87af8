"""``Snapledger``: the control client, what the console and the CLI can do as Python calls.

It sends the payloads the console sends (docs/console.md) to a deployment's functions
(Lambda Invoke, the function names found through the stack's outputs) or to the local
runtime's handlers in-process, so the client, the CLI and the console share one
validation and one set of answers. An answer is the function's JSON object; a refusal
(``"ok": false``) raises ``RequestRefusedError`` carrying it.

    with snapledger.local.connect() as registry:     # or Snapledger.for_stack("Snapledger")
        head = registry.latest("orders", 3)["head"]
        job = registry.restore("orders", 3, target_lsn=2_500)
        done = registry.wait(job["job_id"])           # SUCCESS, FAILED or CANCELLED
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from snapledger.client.payloads import Answer, drop_none
from snapledger.client.producer_offsets_actions import ProducerOffsetsActions
from snapledger.client.restate_actions import RestateActions
from snapledger.client.retention_actions import POLICY_FIELD_NAMES, RetentionActions
from snapledger.client.transport import AwsTransport, Transport
from snapledger.errors import SnapledgerError
from snapledger.ids import new_ulid
from snapledger.models.jobs import TERMINAL_STATES
from snapledger.stack_names import STACK_NAME

__all__ = [
    "POLICY_FIELD_NAMES",
    "WAIT_POLL_SECONDS",
    "WAIT_TIMEOUT_SECONDS",
    "Answer",
    "JobWaitTimeoutError",
    "RequestRefusedError",
    "Snapledger",
]

#: How often ``wait`` asks for a job's state, and how long it waits by default.
WAIT_POLL_SECONDS = 5.0
WAIT_TIMEOUT_SECONDS = 3600.0


class RequestRefusedError(SnapledgerError):
    """The function answered ``"ok": false``; ``answer`` holds its error, message and fields."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(f"{answer.get('error', 'refused')}: {answer.get('message', answer)}")
        self.answer = answer


class JobWaitTimeoutError(SnapledgerError):
    """The job was not finished when ``wait`` gave up; ``job`` is its last known state."""

    def __init__(self, job: Answer, waited: float) -> None:
        super().__init__(
            f"job {job.get('job_id')} is still {job.get('state')} after {waited:.0f} s: "
            "wait again, or look it up with jobs --job-id"
        )
        self.job = job


class Snapledger(RetentionActions, RestateActions, ProducerOffsetsActions):
    """One registry: a deployment (``for_stack``), or the local runtime
    (``snapledger.local.connect()``, which gives one over its own transport)."""

    def __init__(self, transport: Transport, *, close: Callable[[], None] | None = None) -> None:
        self._transport = transport
        self._close = close

    @classmethod
    def for_stack(cls, stack_name: str = STACK_NAME, region: str | None = None) -> Snapledger:
        """The deployment of the CloudFormation stack ``stack_name`` (AWS credentials of the
        environment; ``lambda:InvokeFunction`` on its functions)."""
        return cls(AwsTransport(stack_name=stack_name, region=region))

    def close(self) -> None:
        if self._close is not None:
            self._close()
            self._close = None

    def __enter__(self) -> Snapledger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, function: str, payload: dict[str, Any]) -> Answer:
        """Send a console payload to ``function``; the answer, or RequestRefusedError."""
        answer = self._transport.invoke(function, payload)
        if not answer.get("ok", True):
            raise RequestRefusedError(answer)
        return answer

    # -- queries ------------------------------------------------------------------------

    def latest(self, stream: str, partition: int) -> Answer:
        """The partition's HEAD (``head.latest_snapshot_id``, ``head.latest_lsn``, ...)."""
        return self.call("query", {"action": "latest", "stream": stream, "partition": partition})

    def snapshots(
        self, stream: str, partition: int, *, limit: int | None = None, cursor: str | None = None
    ) -> Answer:
        """The partition's snapshot records, highest LSN first (``snapshots``, ``cursor``)."""
        payload = {"action": "list", "stream": stream, "partition": partition}
        return self.call("query", drop_none({**payload, "limit": limit, "cursor": cursor}))

    def snapshot(self, stream: str, partition: int, snapshot_id: str) -> Answer:
        """One snapshot record by id (``snapshot``: its ``manifest_key``, LSN, status,
        ``file_count``, ``format``, ``offsets``...; ``SnapshotReader.open`` takes the key)."""
        return self.call(
            "query",
            {
                "action": "snapshot",
                "stream": stream,
                "partition": partition,
                "snapshot_id": snapshot_id,
            },
        )

    def history(
        self,
        stream: str,
        partition: int | None = None,
        *,
        after_seq: int | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Answer:
        """A partition's events in order; without a partition, the stream's (policy changes)."""
        return self.call(
            "query",
            drop_none(
                {
                    "action": "history",
                    "stream": stream,
                    "partition": partition,
                    "after_seq": after_seq,
                    "limit": limit,
                    "cursor": cursor,
                }
            ),
        )

    def job(self, job_id: str) -> Answer:
        """One job with its transitions (``job``: ``state``, ``failure_reason``, ...)."""
        return self.call("query", {"action": "job", "job_id": job_id})

    def jobs(self, *, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.call("query", drop_none({"action": "jobs", "limit": limit, "cursor": cursor}))

    # -- jobs ---------------------------------------------------------------------------

    def bootstrap(
        self,
        stream: str,
        partitions: Sequence[int],
        *,
        target_lsn: int | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Build first snapshots of ``partitions`` from the changelog; the job's answer."""
        return self.call(
            "launch",
            drop_none(
                {
                    "action": "bootstrap",
                    "stream": stream,
                    "partitions": list(partitions),
                    "target_lsn": target_lsn,
                    "request_id": request_id,
                }
            ),
        )

    def restore(
        self,
        stream: str,
        partition: int,
        *,
        snapshot_id: str | None = None,
        as_of_lsn: int | None = None,
        as_of_time: str | datetime | None = None,
        target_lsn: int | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Restore a partition from a snapshot (the latest unless one of ``snapshot_id``,
        ``as_of_lsn``, ``as_of_time`` chooses) plus the changelog up to ``target_lsn``."""
        chosen = [c for c in (snapshot_id, as_of_lsn, as_of_time) if c is not None]
        if len(chosen) > 1:
            raise ValueError("choose the base with one of snapshot_id, as_of_lsn, as_of_time")
        source: Any = "latest"
        if snapshot_id is not None:
            source = {"snapshot_id": snapshot_id}
        elif as_of_lsn is not None:
            source = {"lsn": as_of_lsn}
        elif as_of_time is not None:
            when = as_of_time.isoformat() if isinstance(as_of_time, datetime) else as_of_time
            source = {"time": when}
        return self.call(
            "launch",
            drop_none(
                {
                    "action": "restore",
                    "stream": stream,
                    "partition": partition,
                    "from": source,
                    "target_lsn": target_lsn,
                    "request_id": request_id,
                }
            ),
        )

    # --- stream snapshots by generation ---------------------------------------------------

    def request_stream_snapshot(
        self,
        stream: str,
        partitions: Sequence[int],
        *,
        min_lsn: dict[int, int] | None = None,
        deadline_minutes: int | None = None,
        by: str | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Open the stream's next generation: each partition's processor snapshots at an LSN
        of at least ``min_lsn[partition]`` before the deadline (the answer: ``generation``,
        ``status``, ``deadline``, ``missing``...)."""
        return self.call(
            "launch",
            drop_none(
                {
                    "action": "snapshot_stream",
                    "stream": stream,
                    "partitions": list(partitions),
                    "min_lsn": None if not min_lsn else {str(p): n for p, n in min_lsn.items()},
                    "deadline_minutes": deadline_minutes,
                    "by": by,
                    "request_id": request_id or new_ulid(),
                }
            ),
        )

    def generation(self, stream: str, generation: int | None = None) -> Answer:
        """One stream snapshot (the newest without ``generation``): status and members."""
        payload = {"action": "generation", "stream": stream, "generation": generation}
        return self.call("query", drop_none(payload))

    def generations(
        self, stream: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Answer:
        """The stream's snapshots by generation, newest first (``generations``, ``cursor``)."""
        payload = {"action": "generations", "stream": stream, "limit": limit, "cursor": cursor}
        return self.call("query", drop_none(payload))

    def restore_stream(
        self,
        stream: str,
        generation: int,
        *,
        partitions: Sequence[int] | None = None,
        target_lsns: dict[int, int] | None = None,
        request_id: str | None = None,
    ) -> Answer:
        """Restore every member partition (or ``partitions``) of a COMPLETED generation from
        its member snapshot, in one job; ``target_lsns`` per partition (default: the end of
        each changelog)."""
        return self.call(
            "launch",
            drop_none(
                {
                    "action": "restore",
                    "stream": stream,
                    "from": {"generation": generation},
                    "partitions": None if partitions is None else list(partitions),
                    "target_lsns": None
                    if target_lsns is None
                    else {str(p): n for p, n in target_lsns.items()},
                    "request_id": request_id,
                }
            ),
        )

    def wait(
        self,
        job_id: str,
        *,
        timeout: float = WAIT_TIMEOUT_SECONDS,
        poll: float = WAIT_POLL_SECONDS,
        on_state: Callable[[Answer], None] | None = None,
    ) -> Answer:
        """The job once it is SUCCESS, FAILED or CANCELLED (its ``job`` record; a failed
        job's ``failure_reason`` says why). ``on_state`` sees each new state;
        JobWaitTimeoutError after ``timeout`` seconds."""
        started = time.monotonic()
        seen = None
        while True:
            job = self.job(job_id)["job"]
            if job.get("state") != seen:
                seen = job.get("state")
                if on_state is not None:
                    on_state(job)
            if job.get("state") in TERMINAL_STATES:
                return dict(job)
            waited = time.monotonic() - started
            if waited + poll > timeout:
                raise JobWaitTimeoutError(job, waited)
            time.sleep(poll)
