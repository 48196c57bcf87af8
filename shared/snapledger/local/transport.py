"""The CLI's way to the local runtime: the same handlers, called in-process."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.local.router import Router, invoke
from snapledger.local.runtime import LocalRuntime, local_home, running_endpoint

#: Said on stderr before a command starts its own DynamoDB Local (no ``local up`` running).
STARTING_NOTICE = (
    "snapledger: starting DynamoDB Local for --local (often 15-30 s; "
    "`snapledger local up` keeps one running, so commands answer at once)"
)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class LocalTransport:
    """Invokes ``functions.{name}.handler`` against a LocalRuntime (started on open)."""

    local: LocalRuntime
    router: Router

    @classmethod
    def open(
        cls, home: str | Path | None = None, *, say: Callable[[str], None] = _to_stderr
    ) -> LocalTransport:
        """Start the local runtime for ``home``: ``local up``'s DynamoDB Local if it runs,
        else one of its own, announced with ``say`` first (it takes a while)."""
        folder = local_home(home)
        if running_endpoint(folder) is None:
            say(STARTING_NOTICE)
        local = LocalRuntime(home=folder)
        runtime = local.start()
        router = Router(runtime.store)
        bind = getattr(local.runner, "bind", None)
        if bind is not None:
            bind(router)
        return cls(local=local, router=router)

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        answer = invoke(function, payload, request_id=str(uuid.uuid4()))
        drain = getattr(self.local.runner, "drain", None)
        if drain is not None:
            drain()  # a job started by this command finishes before the CLI exits
        return answer

    def close(self) -> None:
        self.local.stop()
