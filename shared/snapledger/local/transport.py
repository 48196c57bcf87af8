"""The CLI's way to the local runtime: the same handlers, called in-process."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.local.router import Router, invoke
from snapledger.local.runtime import LocalRuntime, local_home


@dataclass
class LocalTransport:
    """Invokes ``functions.{name}.handler`` against a LocalRuntime (started on open)."""

    local: LocalRuntime
    router: Router

    @classmethod
    def open(cls, home: str | Path | None = None) -> LocalTransport:
        local = LocalRuntime(home=local_home(home))
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
