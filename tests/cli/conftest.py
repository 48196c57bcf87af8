"""The CLI's fixtures: the functions in-process on a moto ledger, and three snapshots."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from snapledger.cli import app as cli_app
from snapledger.local.handlers import HANDLERS, LogsRouted
from snapledger.local.router import call_handler
from snapledger.runtime import runtime_override
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import make_runtime, moto_ledger, write_segments, write_snapshot


@dataclass
class InProcess:
    """The local transport's behaviour (handlers in-process) on a moto-backed runtime; the
    functions' logs kept apart from the CLI's output, as the local transport keeps them."""

    def invoke(self, function, payload):
        return call_handler(LogsRouted(HANDLERS, FUNCTION_LOGS), function, payload)


#: Where the in-process functions log (a test may read it).
FUNCTION_LOGS = io.StringIO()


POWERTOOLS = {
    "POWERTOOLS_SERVICE_NAME": "snapledger",
    "POWERTOOLS_METRICS_NAMESPACE": "Snapledger",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


@pytest.fixture
def rt(tmp_path, clock, monkeypatch):
    from snapledger.adapters.object_store_file import FileObjectStore

    for name, value in POWERTOOLS.items():
        monkeypatch.setenv(name, value)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), clock)
        with runtime_override(runtime):
            monkeypatch.setattr(cli_app, "_transport", lambda options: InProcess())
            yield runtime


@pytest.fixture
def clock():
    from snapledger.clock import ManualClock

    return ManualClock()


@pytest.fixture
def seeded(rt):
    ids = []
    for lsn in (100, 200, 300):
        key = write_snapshot(rt.store, "orders", 3, lsn)
        ids.append(
            register_manifest(
                key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
            ).snapshot_id
        )
    write_segments(rt.store, "orders", 3, (0, 99), (100, 399))
    write_segments(rt.store, "payments", 0, (0, 49))
    return ids
