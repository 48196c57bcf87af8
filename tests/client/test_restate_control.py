"""The control client's Restate actions: heal and restore_latest send the console's payloads
to the gc function, answered by the same handler; a refusal raises with its reason."""

from __future__ import annotations

from typing import Any

import pytest

from snapledger.client.control import RequestRefusedError, Snapledger
from snapledger.models.ledger import LineageId
from tests.functions.restate_seed import STREAM, damage, latest_names, seed_restate


class Recording:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((function, payload))
        return {"ok": True}


@pytest.fixture
def restate(registry):
    client, runtime = registry
    return client, runtime, seed_restate(runtime)


def test_heal_and_restore_latest_send_the_console_payloads(monkeypatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "ann")
    transport = Recording()
    client = Snapledger(transport)
    client.heal("payments")
    client.heal("payments", 2, dry_run=True)
    client.restore_latest("payments", 0, "snap_1", reason="incident 7")
    client.restore_latest("payments", 0, "snap_1", by="bob", request_id="r-1")
    heal_all, heal_one, restore, restore_by = transport.sent
    assert heal_all == ("gc", {"action": "restate_heal", "stream": "payments", "dry_run": False})
    assert heal_one[1] == {
        "action": "restate_heal",
        "stream": "payments",
        "partition": 2,
        "dry_run": True,
    }
    assert restore[0] == "gc"
    sent = dict(restore[1])
    assert len(sent.pop("request_id")) == 26  # one new id per restore: a retry applies once
    assert sent == {
        "action": "restate_restore",
        "stream": "payments",
        "partition": 0,
        "snapshot_id": "snap_1",
        "by": "ann",  # who runs the client, unless told
        "reason": "incident 7",
    }
    assert (restore_by[1]["by"], restore_by[1]["request_id"]) == ("bob", "r-1")


def test_a_broken_latest_healed_then_a_chosen_snapshot_restored(restate) -> None:
    client, rt, seeded = restate
    damage(rt, seeded[0][2])
    planned = client.heal(STREAM, dry_run=True)
    assert [o["state"] for o in planned["outcomes"]] == ["would_heal", "healthy"]
    healed = client.heal(STREAM, 0)
    assert [(o["state"], o["healed_to"]) for o in healed["outcomes"]] == [
        ("healed", seeded[0][1].location.snapshot_id)
    ]
    chosen = seeded[0][0].location.snapshot_id
    restored = client.restore_latest(
        STREAM, 0, chosen, reason="rebuild from an older base", by="carol"
    )
    assert (restored["snapshot_id"], restored["lsn"]) == (chosen, 1000)
    assert latest_names(rt, 0) == chosen
    history = client.history(STREAM, 0)["events"]
    last = history[-1]
    assert (last["type"], last["cause"], last["by"], last["reason"]) == (
        "ProducerLatestRepointed",
        "restore",
        "carol",
        "rebuild from an older base",
    )
    record = rt.ledger.find_snapshot(LineageId(stream=STREAM, partition=0), chosen)
    assert [h.by for h in record.holds] == ["carol"]


def test_a_refused_restore_raises_with_the_reason(restate) -> None:
    client, rt, _ = restate
    before = latest_names(rt, 1)
    with pytest.raises(RequestRefusedError, match="not a Restate stream") as refused:
        client.restore_latest("orders", 1, "snap_1001Test1001", by="dan")
    assert refused.value.answer["error"] == "invalid_request"
    with pytest.raises(RequestRefusedError, match="snapshot_id") as invalid:
        client.restore_latest(STREAM, 1, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y", by="dan")
    assert invalid.value.answer["error"] == "validation"
    assert latest_names(rt, 1) == before
