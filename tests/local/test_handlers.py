"""The local runtime is given its handler table (the router and the transport call what they
are given), and ``snapledger.local.connect()`` gives the control client on it."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

import snapledger.local
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client import RequestRefusedError, Snapledger
from snapledger.local.handlers import HANDLERS
from snapledger.local.router import Router
from snapledger.local.transport import LocalTransport
from snapledger.ports import ObjectInfo
from tests.functions.support import POWERTOOLS_ENV


class Recording:
    """A handler table whose every handler records its call and answers ``answer``."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any], Any]] = []
        self.answer = answer or {"ok": True}

    def table(self, *names: str) -> dict[str, Any]:
        return {name: self._handler(name) for name in names}

    def _handler(self, name: str):
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            self.calls.append((name, event, context))
            return self.answer

        return handler


def test_the_table_is_each_local_function_s_handler(monkeypatch):
    for name, value in POWERTOOLS_ENV.items():  # as the functions are imported in Lambda
        monkeypatch.setenv(name, value)
    assert set(HANDLERS) == {"gc", "job_state", "launch", "query", "register", "track_changelog"}
    for name in HANDLERS:
        assert HANDLERS[name] is importlib.import_module(f"functions.{name}").handler
    with pytest.raises(KeyError, match="no function 'nope'"):
        HANDLERS["nope"]


def test_the_router_calls_the_handlers_it_is_given(tmp_path):
    recording = Recording()
    router = Router(FileObjectStore(tmp_path), recording.table("register", "job_state"))
    key = "snapshots/orders/3/00000000000000000100-01J00000000000000000000000/_manifest.json"
    router.object_created(ObjectInfo(key=key, size=12, last_modified=datetime.now(UTC)))
    router.job_state(job_id="j", run_id="r", state="RUNNING", previous="SUBMITTED")
    (first, event, context), (second, change, _) = recording.calls
    assert (first, context.function_name) == ("register", "snapledger-register")
    assert event["Records"][0]["s3"]["object"]["key"] == key
    assert (second, change["detail"]["state"]) == ("job_state", "RUNNING")


def test_connect_gives_a_client_on_the_local_transport(monkeypatch):
    recording = Recording({"ok": False, "error": "not_found", "message": "no HEAD"})
    transport = LocalTransport(
        local=SimpleNamespace(runner=None, stop=lambda: closed.append(True)),  # type: ignore[arg-type]
        router=None,  # type: ignore[arg-type]
        handlers=recording.table("query"),
    )
    closed: list[bool] = []
    opened: list[object] = []

    def open_(cls, home=None, **_: object) -> LocalTransport:
        opened.append(home)
        return transport

    monkeypatch.setattr(LocalTransport, "open", classmethod(open_))
    with snapledger.local.connect("somewhere") as registry:
        assert isinstance(registry, Snapledger)
        with pytest.raises(RequestRefusedError):
            registry.latest("orders", 3)
    assert opened == ["somewhere"] and closed == [True]
    ((name, payload, context),) = recording.calls
    assert (name, payload) == ("query", {"action": "latest", "stream": "orders", "partition": 3})
    assert context.function_name == "snapledger-query"
