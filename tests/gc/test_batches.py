"""GC at the limits of one request: many expiries per lineage, many objects per snapshot."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.models.gc_commands import MAX_EXPIRE_PER_COMMAND
from snapledger.ports import DeleteResult
from snapledger.services.gc import run_gc
from tests.gc.support import (
    assert_ledger_and_store_agree,
    gc_deps,
    prefix_of,
    records,
    register,
    statuses,
)
from tests.support import create_ledger, local_client

CONFIG = GcConfig()


class RecordingStore:
    """Counts listing pages and keeps each delete_many call's keys."""

    def __init__(self, inner) -> None:
        self.inner, self.pages, self.deletes, self._lock = inner, 0, [], threading.Lock()

    def list_page(self, prefix, **kw):
        with self._lock:
            self.pages += 1
        return self.inner.list_page(prefix, **kw)

    def delete_many(self, keys):
        self.deletes.append(list(keys))
        return self.inner.delete_many(keys)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.ddblocal
def test_more_expiries_than_one_transaction_holds_are_split(dynamodb_local, store, clock):
    # (DynamoDB Local only: moto copies every table on each transaction, too slow here)
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    # Given one lineage with more deletable snapshots than one transaction may carry
    count = 2 * MAX_EXPIRE_PER_COMMAND + 10
    for n in range(count):
        register(ledger, store, clock, 10 * (n + 1), files=1)
    clock.advance(timedelta(days=2))
    # When GC runs
    report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    # Then all but the newest three are deleted, in several transactions, consistently
    assert report.counts()["snapshots_deleted"] == count - 3
    assert list(statuses(ledger).values()).count("REGISTERED") == 3
    assert_ledger_and_store_agree(ledger, store)


def test_a_big_snapshot_costs_a_listing_and_a_delete_per_1000_objects_manifest_last(
    ledger, store, clock
):
    # Given an old snapshot of 1,500 files (and three newer ones)
    register(ledger, store, clock, 10, files=1_500)
    for lsn in (20, 30, 40):
        register(ledger, store, clock, lsn, files=1)
    clock.advance(timedelta(days=2))
    recording = RecordingStore(store)
    # When GC deletes it
    run_gc(gc_deps(ledger, recording, clock), config=CONFIG)
    # Then two listings of the lineage (1,000 + 507) and two DeleteObjects (1,000 + 501)
    # were made, with the manifest in the very last position
    assert statuses(ledger)[10] == "DELETED"
    assert [len(k) for k in recording.deletes] == [1_000, 501]
    keys = [key for batch in recording.deletes for key in batch]
    assert keys[-1].endswith("/_manifest.json")
    assert all(not k.endswith("_manifest.json") for k in keys[:-1])
    assert recording.pages == 2
    assert_ledger_and_store_agree(ledger, store)


class RefusingStore:
    """Refuses to delete one key (a per-key error in a DeleteObjects answer)."""

    def __init__(self, inner, refused: str) -> None:
        self.inner, self.refused, self.deletes = inner, refused, []

    def delete_many(self, keys):
        self.deletes.append(list(keys))
        result = self.inner.delete_many([k for k in keys if k != self.refused])
        if self.refused not in keys:
            return result
        return DeleteResult(
            deleted=result.deleted, failed=((self.refused, "AccessDenied: refused"),)
        )

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_refused_key_in_a_shared_batch_keeps_only_its_snapshot_expiring(ledger, store, clock):
    # Given two lineages with two due snapshots each
    for partition in (1, 2):
        for lsn in (10, 20, 30, 40, 50):
            register(ledger, store, clock, lsn, partition=partition)
    clock.advance(timedelta(days=2))
    victim = prefix_of(records(ledger, partition=1)[20]) + "part-00001.parquet"
    refusing = RefusingStore(store, victim)
    # When GC runs and S3 refuses one key of one snapshot
    report = run_gc(gc_deps(ledger, refusing, clock), config=CONFIG)
    # Then one DeleteObjects carried all four snapshots, and only the refused key's
    # snapshot stays EXPIRING, with the reason in its lineage's errors
    assert len(refusing.deletes) == 1 and len(refusing.deletes[0]) == 12
    assert statuses(ledger, partition=1) == {
        10: "DELETED",
        20: "EXPIRING",
        30: "REGISTERED",
        40: "REGISTERED",
        50: "REGISTERED",
    }
    assert list(statuses(ledger, partition=2).values()).count("DELETED") == 2
    [errors] = [r.errors for r in report.lineages if r.lineage.partition == 1]
    assert len(errors) == 1 and victim in errors[0] and "next GC run retries" in errors[0]
    # When the next run is not refused, then it finishes the snapshot
    run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    for partition in (1, 2):
        assert list(statuses(ledger, partition=partition).values()).count("DELETED") == 2
        assert_ledger_and_store_agree(ledger, store, partition=partition)


class Trace:
    """Each thread's timeline of budget checks and the requests between them (GC works
    lineages on several threads: each must check before each of its own requests)."""

    def __init__(self) -> None:
        self.timelines: dict[int, list[str]] = {}

    @property
    def events(self) -> list[str]:
        return [event for timeline in self.timelines.values() for event in timeline]

    def add(self, event: str) -> None:
        self.timelines.setdefault(threading.get_ident(), []).append(event)

    def remaining(self) -> float:
        self.add("check")
        return 1_000.0

    def longest_unchecked_stretch(self) -> list[str]:
        stretches: list[list[str]] = []
        for timeline in self.timelines.values():
            current: list[str] = []
            for event in timeline:
                if event == "check":
                    stretches.append(current)
                    current = []
                else:
                    current.append(event)
            stretches.append(current)
        return max(stretches, key=len)


class TracedStore:
    def __init__(self, inner, trace: Trace) -> None:
        self.inner, self.trace = inner, trace

    def list_page(self, prefix, **kw):
        self.trace.add(f"list {prefix}")
        return self.inner.list_page(prefix, **kw)

    def delete_many(self, keys):
        self.trace.add(f"delete {len(keys)} keys")
        return self.inner.delete_many(keys)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class TracedLedger:
    def __init__(self, inner, trace: Trace) -> None:
        self.inner, self.trace = inner, trace

    def commit(self, before, events, after, *, request_token):
        self.trace.add("commit " + ",".join(sorted({e.type for e in events})))
        self.inner.commit(before, events, after, request_token=request_token)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_budget_is_checked_before_every_listing_delete_and_transaction(ledger, store, clock):
    # Given three lineages with due snapshots, one of them big enough for two deletes
    register(ledger, store, clock, 5, partition=0, files=1_200)
    for partition in (0, 1, 2):
        for lsn in (10, 20, 30, 40):
            register(ledger, store, clock, lsn, partition=partition)
    clock.advance(timedelta(days=2))
    trace = Trace()
    deps = gc_deps(TracedLedger(ledger, trace), TracedStore(store, trace), clock)
    # When GC runs
    report = run_gc(deps, config=CONFIG, remaining_seconds=trace.remaining)
    # Then it made every kind of request, and never two without a budget check between
    assert report.counts()["snapshots_deleted"] == 4
    kinds = {event.split(" ")[0] for event in trace.events}
    assert kinds == {"check", "list", "delete", "commit"}
    assert len(trace.longest_unchecked_stretch()) <= 1, trace.events
