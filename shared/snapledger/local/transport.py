"""The client's way to the local runtime: the same handlers, called in-process.

``snapledger.local.connect()`` gives a ``Snapledger`` client over it; the CLI's ``--local``
uses it too. The jobs the functions start run beside it, each in a process of its own
with its log in a file (``local/job_process.py``), never in this one: a launch answers once
the job is submitted, and the client follows the job by its record.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeGuard
from urllib.parse import unquote, urlsplit

from snapledger.errors import InvalidRequestError
from snapledger.local.clients import local_s3_client
from snapledger.local.handlers import HANDLERS, LogsRouted
from snapledger.local.job_process import JobProcesses, join, release, stop_abandoned
from snapledger.local.router import Handler, Router, call_handler
from snapledger.local.runtime import LocalRuntime, local_home, running_endpoint
from snapledger.models.jobs import TERMINAL_STATES, JobState

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from snapledger.client.writer import WrittenSnapshot

#: Said on stderr before a command starts its own DynamoDB Local (no ``local up`` running).
STARTING_NOTICE = (
    "snapledger: starting DynamoDB Local for --local (often 15-30 s; "
    "`snapledger local up` keeps one running, so commands answer at once)"
)
#: The functions' log in the home folder (``function_logs`` not given).
FUNCTION_LOG = "functions.log"
#: ``function_logs`` that means stderr.
STDERR = "-"


def _unfinished_run(job: object) -> TypeGuard[dict[str, Any]]:
    """A job record (a query's ``job``) that has a run and has not ended."""
    return (
        isinstance(job, dict)
        and bool(job.get("run_id"))
        and job.get("state") not in TERMINAL_STATES
    )


def _canonical_root(root: str) -> str:
    """``root`` as one spelling: a folder's resolved ``file://`` URI, an S3 root without its
    trailing slash (what decides whether two roots are the same store)."""
    parts = urlsplit(root)
    if root.startswith("/") or parts.scheme == "file":
        return Path(root if root.startswith("/") else unquote(parts.path)).resolve().as_uri()
    return root.rstrip("/")


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class LocalTransport:
    """Invokes ``handlers[name]`` (the functions) against a LocalRuntime (started on open)."""

    local: LocalRuntime
    router: Router
    handlers: Mapping[str, Handler]
    #: Where the functions' logs went (restored and closed with the transport).
    logs: LogsRouted | None = None
    log_file: TextIO | None = None
    say: Callable[[str], None] = _to_stderr
    #: Whether it uses another's DynamoDB Local (``local up``'s, or one handed to jobs).
    joined: bool = False

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        *,
        say: Callable[[str], None] = _to_stderr,
        handlers: Mapping[str, Handler] = HANDLERS,
        function_logs: str | Path | None = None,
    ) -> LocalTransport:
        """Start the local runtime for ``home``: ``local up``'s DynamoDB Local if it runs,
        else one of its own, announced with ``say`` first (it takes a while).

        The functions' logs are appended to ``function_logs`` (default ``functions.log``
        in the home folder; ``-``: stderr), never written to stdout (the answer's)."""
        folder = local_home(home)
        stop_abandoned(folder)
        if running_endpoint(folder) is None:
            say(STARTING_NOTICE)
        jobs = JobProcesses(folder, say=say)
        local = LocalRuntime(home=folder, runner=jobs)
        runtime = local.start()
        jobs.endpoint = local.endpoint
        joined = local.endpoint_url is None  # another's: if handed over, kept up until close
        if joined:
            join(folder, os.getpid())
        log_file = None
        if str(function_logs) == STDERR:
            stream = sys.stderr
        else:
            path = Path(function_logs or folder / FUNCTION_LOG)
            path.parent.mkdir(parents=True, exist_ok=True)
            stream = log_file = path.open("a", encoding="utf-8")
        routed = LogsRouted(handlers, stream)
        router = Router(runtime.store, routed, runtime.layouts)
        return cls(
            local=local,
            router=router,
            handlers=routed,
            logs=routed,
            log_file=log_file,
            say=say,
            joined=joined,
        )

    def store_root(self, root: str | None = None) -> str:
        """The snapshot store a ``--local`` writer writes to: the local runtime's (its
        ``store_uri``). ``root``, a store named beside ``--local``, must be that one:
        the runtime registers only what lands there, so another is refused, saying so."""
        own = self.local.store_uri
        if root is None or _canonical_root(root) == _canonical_root(own):
            return own
        raise InvalidRequestError(
            f"--root {root} is not the local runtime's store ({own}), so nothing written "
            "there would be registered: with --local leave --root out (or give that "
            "store); to write elsewhere, register through a deployment instead of --local"
        )

    def s3_client(self) -> S3Client | None:
        """A client for the store's S3 endpoint (``local up --s3-port``); None for a folder."""
        endpoint = self.local.s3_endpoint
        return None if endpoint is None else local_s3_client(endpoint)

    def deliver(self, written: WrittenSnapshot) -> list[dict[str, Any]]:
        """Register a snapshot just written (its manifest last), as S3's notification does
        in AWS: the router's answers, each with its records' ``outcome``."""
        return self.router.scan((written.prefix,), settled=True)

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        answer = self._call(function, payload)
        if function == "query" and payload.get("action") == "job":
            return self._with_dead_process_failed(payload, answer)
        return answer

    def _call(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return call_handler(self.handlers, function, payload, request_id=str(uuid.uuid4()))

    def _with_dead_process_failed(
        self, payload: dict[str, Any], answer: dict[str, Any]
    ) -> dict[str, Any]:
        """A job's record, once its process is found dead without having reported how the
        job ended: FAILED with why, recorded as EMR's FAILED state change is (the job_state
        function, through the router), then read again. Nothing watches a local job's
        process as EMR Serverless watches a run, so a look-up at its record does."""
        jobs = self.local.runner
        job = answer.get("job")
        if not isinstance(jobs, JobProcesses) or not _unfinished_run(job):
            return answer
        reason = jobs.ended_unreported(job["run_id"])
        if reason is None:
            return answer
        # Gone, so it reports nothing more: what it reported before it went is now read.
        fresh = self._call("query", payload)
        job = fresh.get("job")
        if not _unfinished_run(job):
            return fresh
        self.router.job_state(
            job_id=job["job_id"],
            run_id=job["run_id"],
            state=JobState.FAILED.value,
            previous=job["state"],
            details=reason,
        )
        return self._call("query", payload)

    def close(self) -> None:
        jobs = self.local.runner
        running = jobs.hand_over(self.local) if isinstance(jobs, JobProcesses) else []
        if running:  # the jobs outlive this command, and the DynamoDB Local they use
            self.say(
                f"snapledger: DynamoDB Local stays up for the running job (process "
                f"{', '.join(map(str, running))}) and stops when it ends"
            )
        self.local.stop()
        if self.joined:
            release(self.local.home, os.getpid())
        if self.logs is not None:
            self.logs.restore()
        if self.log_file is not None:
            self.log_file.close()
