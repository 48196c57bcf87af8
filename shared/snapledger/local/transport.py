"""The client's way to the local runtime: the same handlers, called in-process.

``snapledger.local.connect()`` gives a ``Snapledger`` client over it; the CLI's ``--local``
uses it too.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.local.handlers import HANDLERS
from snapledger.local.router import Handler, Router, call_handler
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
    """Invokes ``handlers[name]`` (the functions) against a LocalRuntime (started on open)."""

    local: LocalRuntime
    router: Router
    handlers: Mapping[str, Handler]

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        *,
        say: Callable[[str], None] = _to_stderr,
        handlers: Mapping[str, Handler] = HANDLERS,
    ) -> LocalTransport:
        """Start the local runtime for ``home``: ``local up``'s DynamoDB Local if it runs,
        else one of its own, announced with ``say`` first (it takes a while)."""
        folder = local_home(home)
        if running_endpoint(folder) is None:
            say(STARTING_NOTICE)
        local = LocalRuntime(home=folder)
        runtime = local.start()
        router = Router(runtime.store, handlers)
        bind = getattr(local.runner, "bind", None)
        if bind is not None:
            bind(router)
        return cls(local=local, router=router, handlers=handlers)

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        answer = call_handler(self.handlers, function, payload, request_id=str(uuid.uuid4()))
        drain = getattr(self.local.runner, "drain", None)
        if drain is not None:
            drain()  # a job started by this command finishes before the CLI exits
        return answer

    def close(self) -> None:
        self.local.stop()
