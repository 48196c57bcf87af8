"""The launch function refuses a base that is not REGISTERED as it refuses an opaque one
(issue 30): ``ok: false``, ``invalid_request`` and why; before, it answered ``ok: true``
with the job recorded FAILED."""

from __future__ import annotations

import importlib

import pytest

from snapledger.models.ledger import SnapshotStatus
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_history, write_segments, write_snapshot


@pytest.fixture
def launch_handler(powertools_env):
    return importlib.import_module("functions.launch").handler


def test_a_deleted_base_is_refused_like_an_opaque_one(rt, launch_handler, context):
    write_segments(rt.store, "orders", 3, (0, 99))
    statuses = [SnapshotStatus.DELETED, SnapshotStatus.REGISTERED]
    deleted = write_history(rt.ledger, "orders", 3, statuses, rt.clock.now())[0]
    payload = {"action": "restore", "stream": "orders", "partition": 3}

    answer = launch_handler({**payload, "from": {"snapshot_id": deleted.snapshot_id}}, context)

    assert set(answer) == {"ok", "error", "message"}, answer
    assert (answer["ok"], answer["error"]) == (False, "invalid_request")
    assert f"{deleted.snapshot_id} of orders/3 (LSN 1) is DELETED" in answer["message"]
    assert rt.runner.started == {} and rt.jobs.list_jobs().items == []
    # the refusal of an opaque base, for the same shape
    key = write_snapshot(rt.store, "orders", 3, 50, files={"CURRENT": b"M\n"}, format="opaque")
    register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY)
    opaque = launch_handler({**payload, "from": {"lsn": 60}}, context)
    assert set(opaque) == set(answer) and opaque["error"] == answer["error"], opaque
