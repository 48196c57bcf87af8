"""The in-process router: object arrivals and job state changes, as AWS would deliver them.

Files under the local root become S3 ``ObjectCreated`` notifications for the same handlers
the bucket notifications trigger in AWS (``snapshots/**/_manifest.json`` → register,
``changelog/**.parquet`` → track_changelog); the local runner's job state changes become
``EMR Serverless Job Run State Change`` events for job_state. ``scan()`` finds what
arrived since the last scan (``snapledger local up`` polls it).
"""

from __future__ import annotations

import importlib
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from snapledger.layout import CHANGELOG, MANIFEST_NAME, SNAPSHOTS
from snapledger.local.aws_events import emr_job_state_change, s3_object_created
from snapledger.ports import ObjectStore

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalContext:
    """The parts of a Lambda context the handlers read."""

    function_name: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:000000000000:function:local"
    aws_request_id: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 15 * 60 * 1000


def function_handler(name: str) -> Handler:
    """``functions.{name}.handler``, imported on first use."""
    module = importlib.import_module(f"functions.{name}")
    handler: Handler = module.handler
    return handler


def invoke(name: str, event: dict[str, Any], request_id: str | None = None) -> dict[str, Any]:
    """Call a function's handler as Lambda would (a new request id per invocation)."""
    context = LocalContext(
        function_name=f"snapledger-{name}", aws_request_id=request_id or str(uuid.uuid4())
    )
    return function_handler(name)(event, context)


def route_for(key: str) -> str | None:
    """Which function an arrival at ``key`` goes to, as the bucket notifications say."""
    if key.startswith(f"{SNAPSHOTS}/") and key.endswith(f"/{MANIFEST_NAME}"):
        return "register"
    if key.startswith(f"{CHANGELOG}/") and key.endswith(".parquet"):
        return "track_changelog"
    return None


class Router:
    """Delivers local arrivals and job state changes to the functions, in-process."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def object_created(self, key: str, size: int) -> dict[str, Any] | None:
        """Deliver one arrival; None if no notification covers that key."""
        function = route_for(key)
        if function is None:
            return None
        with self._lock:
            self._seen.add(key)
        return invoke(function, s3_object_created(key, size))

    def scan(
        self, prefixes: tuple[str, ...] = (f"{CHANGELOG}/", f"{SNAPSHOTS}/")
    ) -> list[dict[str, Any]]:
        """Deliver every routed object not delivered before (each at most once per router)."""
        answers = []
        for prefix in prefixes:
            for info in self.store.list(prefix):
                with self._lock:
                    if info.key in self._seen or route_for(info.key) is None:
                        continue
                answer = self.object_created(info.key, info.size)
                if answer is not None:
                    answers.append(answer)
        return answers

    def job_state(
        self, *, job_id: str, run_id: str, state: str, previous: str | None, details: str = ""
    ) -> dict[str, Any]:
        event = emr_job_state_change(
            job_id=job_id, run_id=run_id, state=state, previous_state=previous, details=details
        )
        return invoke("job_state", event, request_id=event["id"])
