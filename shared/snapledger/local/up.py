"""``snapledger local up``: a long-running local runtime a stream processor can write to.

DynamoDB Local with its data kept under the home folder, the router polling the local
root so that files dropped under ``snapshots/`` or ``changelog/`` are processed as in
AWS (once complete: unchanged across two polls; a rewrite is a new arrival, see
``router.py``), and local Spark for the jobs they start. Ctrl-C stops everything cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from snapledger.local.dynamodb_local import NotACheckoutError
from snapledger.local.handlers import HANDLERS
from snapledger.local.router import Router
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime, local_home, running_endpoint


def run_local_up(*, home: str | Path | None, poll_seconds: float = 1.0) -> int:
    try:
        folder = local_home(home)
    except NotACheckoutError as exc:  # installed from a wheel: one line, no traceback
        print(f"snapledger: {exc}", file=sys.stderr)
        return 2
    if running_endpoint(folder) is not None:
        print(f"a local runtime is already running for {folder}", file=sys.stderr)
        return 2
    local = LocalRuntime(home=folder)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    runtime = local.start()
    try:
        router = Router(runtime.store, HANDLERS)
        bind = getattr(local.runner, "bind", None)
        if bind is not None:
            bind(router)
        (folder / RUNTIME_FILE).write_text(
            json.dumps({"pid": os.getpid(), "endpoint": local.endpoint_url})
        )
        print(f"snapledger local runtime: root file://{local.root}", flush=True)
        print(f"  DynamoDB Local at {local.endpoint_url}, data in {folder / 'dynamodb'}")
        print("  drop snapshots under snapshots/ and changelog under changelog/; Ctrl-C stops")
        while not stopping:
            for answer in router.scan():
                print(json.dumps(answer, default=str), flush=True)
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        pass
    finally:
        (folder / RUNTIME_FILE).unlink(missing_ok=True)
        local.stop()
        print("stopped", file=sys.stderr)
    return 0
