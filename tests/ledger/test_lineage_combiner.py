"""The per-lineage combiner: one writer per lineage in a process, queued commands together."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from snapledger.errors import StoreUnavailableError
from snapledger.models.ledger import LineageId
from snapledger.services.lineage_combiner import LineageCombiner
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import moto_ledger, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


class Gated:
    """A ledger whose first load waits until ``release`` is set; commits are counted."""

    def __init__(self, ledger):
        self._ledger = ledger
        self.loading = threading.Event()
        self.release = threading.Event()
        self.commits: list[int] = []
        self.fail_next_commit = False

    def __getattr__(self, name):
        return getattr(self._ledger, name)

    def load(self, *args, **kwargs):
        if not self.loading.is_set():
            self.loading.set()
            assert self.release.wait(10)
        return self._ledger.load(*args, **kwargs)

    def commit(self, before, events, after, **kwargs):
        if self.fail_next_commit:
            self.fail_next_commit = False
            raise StoreUnavailableError("the table did not answer (simulated)")
        self.commits.append(len(events))
        return self._ledger.commit(before, events, after, **kwargs)


def queued(combiner: LineageCombiner) -> int:
    return sum(len(lineage.queue) for lineage in combiner._lineages.values())


def test_commands_queued_behind_the_writer_are_committed_together(store, clock):
    with moto_ledger() as ledger:
        gated = Gated(ledger)
        combiner = LineageCombiner()
        keys = [write_snapshot(store, lsn=lsn) for lsn in range(100, 106)]

        def register(key):
            return register_manifest(
                key, ledger=gated, store=store, clock=clock, combiner=combiner, layouts=NATIVE_ONLY
            )

        with ThreadPoolExecutor(6) as pool:
            # Given one writer inside its load, and five registrations queued behind it
            first = pool.submit(register, keys[0])
            assert gated.loading.wait(10)
            rest = [pool.submit(register, key) for key in keys[1:]]
            deadline = time.monotonic() + 10
            while queued(combiner) < 5:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            # When the writer goes on
            gated.release.set()
            results = [first.result(), *(f.result() for f in rest)]
        # Then the five were committed in one transaction after the first's (in the order
        # they queued: each a SnapshotRegistered, with a LatestAdvanced if above the latest)
        assert results[0].outcome is Outcome.BECAME_LATEST
        assert {r.outcome for r in results} <= {Outcome.BECAME_LATEST, Outcome.RECORDED}
        assert len(gated.commits) == 2
        assert gated.commits[0] == 2
        assert 5 + 1 <= gated.commits[1] <= 5 + 5
        assert ledger.get_head(ORDERS_3).latest_lsn == 105
        assert combiner._lineages == {}  # the writer left when the queue was empty


def test_a_failed_transaction_fails_each_of_its_commands_and_the_next_one_works(store, clock):
    with moto_ledger() as ledger:
        gated = Gated(ledger)
        gated.loading.set()  # no gate
        gated.fail_next_commit = True
        combiner = LineageCombiner()
        key = write_snapshot(store, lsn=100)
        with pytest.raises(StoreUnavailableError):
            register_manifest(
                key, ledger=gated, store=store, clock=clock, combiner=combiner, layouts=NATIVE_ONLY
            )
        assert combiner._lineages == {}
        again = register_manifest(
            key, ledger=gated, store=store, clock=clock, combiner=combiner, layouts=NATIVE_ONLY
        )
        assert again.outcome is Outcome.BECAME_LATEST


def test_batches_are_at_most_ten_commands():
    with pytest.raises(ValueError, match="max_batch"):
        LineageCombiner(max_batch=11)


class RefusesOne:
    """A ledger that refuses every transaction carrying one snapshot (as DynamoDB refuses
    an item it cannot store), and counts the transactions it accepts."""

    def __init__(self, ledger, poison_snapshot_id):
        self._ledger = ledger
        self.poison = poison_snapshot_id
        self.accepted: list[int] = []

    def __getattr__(self, name):
        return getattr(self._ledger, name)

    def commit(self, before, events, after, **kwargs):
        if any(getattr(e, "snapshot_id", None) == self.poison for e in events):
            raise ValueError("simulated: the table refuses this item")
        self.accepted.append(len(events))
        return self._ledger.commit(before, events, after, **kwargs)


def test_a_command_the_table_refuses_never_fails_the_others_of_its_batch(store, clock):
    # Issue 27 row 1: a lineage's commands share one transaction; one the table refuses
    # used to fail every other on every retry. Each is now committed alone on a failure.
    from snapledger.layout import parse_manifest_key
    from snapledger.services.registration import RegistrationFailed, register_manifests

    with moto_ledger() as ledger:
        keys = [write_snapshot(store, lsn=lsn) for lsn in (100, 200, 300)]
        poison = parse_manifest_key(keys[1]).snapshot_id
        refusing = RefusesOne(ledger, poison)
        answers = register_manifests(
            keys,
            ledger=refusing,
            store=store,
            clock=clock,
            combiner=LineageCombiner(),
            layouts=NATIVE_ONLY,
        )
        assert isinstance(answers[1], RegistrationFailed)
        # each of the others committed alone, in order: each advanced the latest
        assert [a.outcome for i, a in enumerate(answers) if i != 1] == [
            Outcome.BECAME_LATEST,
            Outcome.BECAME_LATEST,
        ]
        assert ledger.get_head(ORDERS_3).latest_lsn == 300
        assert refusing.accepted and all(n <= 3 for n in refusing.accepted)
