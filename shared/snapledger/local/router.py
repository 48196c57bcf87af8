"""The in-process router: object arrivals and job state changes, as AWS would deliver them.

Files under the local root become S3 ``ObjectCreated`` notifications for the same handlers
the bucket notifications trigger in AWS (``snapshots/**/_manifest.json`` → register,
``changelog/**.parquet`` → track_changelog); the local runner's job state changes become
``EMR Serverless Job Run State Change`` events for job_state. ``scan()`` finds what
arrived since the last scan (``snapledger local up`` polls it). The router is given the
handler table it calls (``snapledger.local.handlers.HANDLERS``: the functions).

Two rules make a folder behave like S3, which notifies once per completed PUT:

- **complete**: a file is delivered once its version (size, modification time in ns,
  inode) is the same at two consecutive scans, so a file still being written is not
  read half-way. A writer that renames a finished temp file into place (the client
  library's file store, ``.tmp-`` names, which listings skip) is never seen unfinished; a
  writer that writes in place must not pause longer than a poll interval mid-file. An
  object of an S3 store (``local up --s3-port``) is complete once listed (a PUT is
  atomic), so it is delivered at the first scan that sees it: a Restate snapshot evicted
  right after it landed still reaches ``register`` (answered ``vanished`` if gone by then).
- **re-put**: a file whose version changed since it was delivered (rewritten, even with
  the same bytes) is a new arrival and is delivered again, as S3 notifies every PUT.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from snapledger.layout import CHANGELOG, SNAPSHOTS
from snapledger.layouts.strategy import Refused
from snapledger.local.aws_events import LOCAL_BUCKET, emr_job_state_change, s3_object_created
from snapledger.ports import ObjectInfo, ObjectStore
from snapledger.strategies.catalog import NATIVE_ONLY, LayoutCatalog

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
#: A file's version: what changes when it is written to or replaced.
Version = tuple[object, ...]
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


def call_handler(
    handlers: Mapping[str, Handler], name: str, event: dict[str, Any], request_id: str | None = None
) -> dict[str, Any]:
    """Call the handler ``name`` of ``handlers`` as Lambda would (a new request id per call)."""
    context = LocalContext(
        function_name=f"snapledger-{name}", aws_request_id=request_id or str(uuid.uuid4())
    )
    return handlers[name](event, context)


def route_for(key: str, layouts: LayoutCatalog = NATIVE_ONLY) -> str | None:
    """Which function an arrival at ``key`` goes to, as the bucket notifications say (any
    layout's manifest, as ``layouts`` places it, e.g. a Restate ``metadata.json``)."""
    placed = layouts.place(key)
    if not isinstance(placed, Refused) or placed.manifest:
        return "register"
    if key.startswith(f"{CHANGELOG}/") and key.endswith(".parquet"):
        return "track_changelog"
    return None


def file_version(store: ObjectStore, info: ObjectInfo) -> Version:
    """``(size, mtime_ns, inode)`` of a file store's file (a rename-into-place of the same
    bytes is a new inode); ``(size, last_modified)`` where the store has no files."""
    root = getattr(store, "root", None)
    if not isinstance(root, Path):
        return (info.size, info.last_modified)
    try:
        stat = (root / info.key).stat()
    except OSError:  # gone since the listing: its next listing decides
        return (info.size, info.last_modified)
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _bucket_key(store_uri: str, key: str) -> tuple[str, str]:
    """The bucket and full key S3 would name an object of the store in (an ``s3://``
    root: its bucket and prefix, e.g. moto's server on loopback); a file root's keys go
    as they are, in the local runtime's bucket name."""
    parts = urlsplit(store_uri)
    if parts.scheme != "s3":
        return LOCAL_BUCKET, key
    prefix = parts.path.strip("/")
    return parts.netloc, f"{prefix}/{key}" if prefix else key


class Router:
    """Delivers local arrivals and job state changes to the functions, in-process."""

    def __init__(
        self,
        store: ObjectStore,
        handlers: Mapping[str, Handler],
        layouts: LayoutCatalog = NATIVE_ONLY,
    ) -> None:
        self.store = store
        self.handlers = handlers
        self.layouts = layouts
        self._delivered: dict[str, Version] = {}  # key -> the version delivered last
        self._pending: dict[str, Version] = {}  # key -> the version the last scan saw
        # Files may be seen half-written; an S3 store's objects are whole once listed.
        self._settles = isinstance(getattr(store, "root", None), Path)
        self._lock = threading.Lock()

    def object_created(self, info: ObjectInfo) -> dict[str, Any] | None:
        """Deliver one arrival now (its writer is done); None if no notification covers it."""
        function = route_for(info.key, self.layouts)
        if function is None:
            return None
        with self._lock:
            self._delivered[info.key] = file_version(self.store, info)
            self._pending.pop(info.key, None)
        bucket, key = _bucket_key(self.store.uri, info.key)
        return call_handler(
            self.handlers, function, s3_object_created(key, info.size, bucket=bucket)
        )

    def scan(
        self,
        prefixes: tuple[str, ...] | None = None,
        *,
        settled: bool = False,
    ) -> list[dict[str, Any]]:
        """Deliver every routed file that is new or changed since it was delivered, once
        complete: unchanged since the previous scan, or at once when ``settled`` (the
        caller knows every write under the root has finished). ``prefixes``: where to
        look (by default changelog/, snapshots/ and each layout's own root)."""
        if prefixes is None:
            roots = tuple(layout.stream_root for layout in self.layouts.rooted)
            prefixes = (f"{CHANGELOG}/", f"{SNAPSHOTS}/", *roots)
        answers = []
        seen: set[str] = set()
        for prefix in prefixes:
            for info in self.store.list(prefix):
                if route_for(info.key, self.layouts) is None:
                    continue
                seen.add(info.key)
                version = file_version(self.store, info)
                with self._lock:
                    if self._delivered.get(info.key) == version:
                        continue
                    waits = self._settles and not settled
                    if waits and self._pending.get(info.key) != version:
                        self._pending[info.key] = version  # still being written, perhaps
                        continue
                answer = self.object_created(info)
                if answer is not None:
                    answers.append(answer)
        with self._lock:  # files deleted before they settled are forgotten
            for key in self._pending.keys() - seen:
                del self._pending[key]
        return answers

    def job_state(
        self, *, job_id: str, run_id: str, state: str, previous: str | None, details: str = ""
    ) -> dict[str, Any]:
        event = emr_job_state_change(
            job_id=job_id, run_id=run_id, state=state, previous_state=previous, details=details
        )
        return call_handler(self.handlers, "job_state", event, request_id=event["id"])
