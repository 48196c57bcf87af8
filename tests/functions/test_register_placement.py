"""The intake places each arriving key once: registration and the queue's message group
are handed the placement it computed (``register_placed``), never placing it again."""

from __future__ import annotations

from collections import Counter

import pytest

from snapledger.strategies.catalog import LayoutCatalog
from tests.functions.support import s3_put_event
from tests.functions.test_register_queue import queue_url, queued_rt
from tests.support import write_snapshot

__all__ = ["queue_url", "queued_rt"]


@pytest.fixture
def placed(monkeypatch) -> Counter[str]:
    """How often the catalog placed each key."""
    seen: Counter[str] = Counter()
    place = LayoutCatalog.place

    def counting(self, key):
        seen[key] += 1
        return place(self, key)

    monkeypatch.setattr(LayoutCatalog, "place", counting)
    return seen


def test_the_queueing_intake_places_each_key_once(
    queued_rt, store, context, register_handler, placed
):
    a = write_snapshot(store, "orders", 3, 100)
    stray = "snapshots/orders/not-a-partition/x/_manifest.json"
    store.put(stray, b"{}")
    answer = register_handler(s3_put_event(a, stray), context)
    assert answer["counts"] == {"queued": 1, "rejected": 1}
    assert placed == {a: 1, stray: 1}


def test_the_registering_intake_places_each_key_once(rt, store, context, register_handler, placed):
    a = write_snapshot(store, "orders", 3, 100)
    answer = register_handler(s3_put_event(a), context)
    assert answer["counts"] == {"became_latest": 1}
    assert placed == {a: 1}
