"""The control client: console payloads in, answers out, refusals raised; ``wait``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from snapledger.client.control import (
    JobWaitTimeoutError,
    RequestRefusedError,
    Snapledger,
)
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_segments, write_snapshot


class Recording:
    """A transport that records what it is sent and answers from a script."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self._answers = list(answers)

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((function, payload))
        return self._answers.pop(0) if self._answers else {"ok": True}


def test_queries_answer_as_the_console_does(registry) -> None:
    client, rt = registry
    ids = []
    for lsn in (100, 200):
        key = write_snapshot(rt.store, "orders", 3, lsn, offsets={"orders-3": lsn})
        ids.append(
            register_manifest(
                key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
            )
        )
    assert client.latest("orders", 3)["head"]["latest_lsn"] == 200
    listed = client.snapshots("orders", 3)["snapshots"]
    assert [(s["lsn"], s["format"], s["offsets"]) for s in listed] == [
        (200, "kv-parquet", {"orders-3": 200}),
        (100, "kv-parquet", {"orders-3": 100}),
    ]
    one = client.snapshot("orders", 3, ids[0].snapshot_id)["snapshot"]
    assert (one["lsn"], one["offsets"]) == (100, {"orders-3": 100})
    assert [e["type"] for e in client.history("orders", 3)["events"]][:1] == ["SnapshotRegistered"]


def test_a_refusal_raises_with_the_answer(registry) -> None:
    client, _ = registry
    with pytest.raises(RequestRefusedError, match="not_found") as refused:
        client.latest("orders", 9)
    assert refused.value.answer["ok"] is False


def test_a_restore_then_its_job_by_id(registry) -> None:
    client, rt = registry
    key = write_snapshot(rt.store, "orders", 3, 100)
    register_manifest(key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY)
    write_segments(rt.store, "orders", 3, (0, 99), (100, 399))
    job = client.restore("orders", 3, target_lsn=300)
    assert job["state"] == "SUBMITTED"
    assert client.job(job["job_id"])["job"]["job_kind"] == "restore"
    with pytest.raises(ValueError, match="one of snapshot_id, as_of_lsn, as_of_time"):
        client.restore("orders", 3, snapshot_id="x", as_of_lsn=1)


def test_each_call_sends_its_console_payload() -> None:
    transport = Recording()
    client = Snapledger(transport)
    client.restore("orders", 3, as_of_lsn=500, target_lsn=900, request_id="r1")
    client.bootstrap("orders", (0, 1), target_lsn=10)
    client.gc_plan("orders")
    client.hold("orders", 3, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y", expires_in=timedelta(hours=1))
    client.set_policy("orders", min_count=3, request_id="p1")
    sent = transport.sent
    assert sent[0] == (
        "launch",
        {
            "action": "restore",
            "stream": "orders",
            "partition": 3,
            "from": {"lsn": 500},
            "target_lsn": 900,
            "request_id": "r1",
        },
    )
    assert sent[1] == (
        "launch",
        {"action": "bootstrap", "stream": "orders", "partitions": [0, 1], "target_lsn": 10},
    )
    assert sent[2] == ("gc", {"dry_run": True, "stream": "orders"})
    assert sent[3][1]["action"] == "hold" and "expires_at" in sent[3][1]
    assert sent[4] == (
        "gc",
        {"action": "policy_set", "stream": "orders", "request_id": "p1", "min_count": 3},
    )


@pytest.mark.parametrize(
    "expires_in", [timedelta(days=999_999_999), timedelta(hours=876_001), timedelta(0)]
)
def test_a_hold_past_its_bound_is_refused_before_anything_is_sent(expires_in) -> None:
    # Issue 27 row 6: datetime.now() + 999,999,999 days raised OverflowError in the client.
    from snapledger.errors import InvalidRequestError

    transport = Recording()
    with pytest.raises(InvalidRequestError, match="expires_in must be more than 0 and at most"):
        Snapledger(transport).hold("orders", 3, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y", expires_in=expires_in)
    assert transport.sent == []


def _job(state: str, reason: str | None = None) -> dict[str, Any]:
    return {"ok": True, "job": {"job_id": "j1", "state": state, "failure_reason": reason}}


def test_wait_returns_the_final_state_and_reports_each_change() -> None:
    transport = Recording(
        _job("SUBMITTED"), _job("RUNNING"), _job("RUNNING"), _job("FAILED", "a gap at 120")
    )
    seen: list[str] = []
    done = Snapledger(transport).wait("j1", poll=0, on_state=lambda j: seen.append(j["state"]))
    assert (done["state"], done["failure_reason"]) == ("FAILED", "a gap at 120")
    assert seen == ["SUBMITTED", "RUNNING", "FAILED"]
    assert len(transport.sent) == 4


def test_wait_gives_up_after_its_timeout_naming_the_last_state() -> None:
    transport = Recording(*[_job("RUNNING")] * 3)
    with pytest.raises(JobWaitTimeoutError, match="j1 is still RUNNING") as timed_out:
        Snapledger(transport).wait("j1", timeout=0.0, poll=0.5)
    assert timed_out.value.job["state"] == "RUNNING"


def test_close_stops_the_runtime_once() -> None:
    closed = []
    with Snapledger(Recording(), close=lambda: closed.append(1)) as client:
        client.latest("orders", 1)
    client.close()
    assert closed == [1]
