"""Faults no emulator produces: lost answers, conflicts, throttles (botocore Stubber)."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from botocore.stub import Stubber

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.errors import ConcurrencyError, LostRaceError, TransientStoreError
from snapledger.models.commands import ManifestSummary, RegisterSnapshot
from snapledger.models.ledger import LineageId
from snapledger.services.commands import RetryPolicy, execute
from snapledger.services.lineage_combiner import LineageCombiner
from snapledger.services.registration import Outcome, register_manifest, register_manifests
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import moto_ledger, write_snapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SID = "01J00000000000000000000000"


class LosesFirstAnswer:
    """A client whose first transaction commits but whose answer never arrives."""

    def __init__(self, client):
        self._client = client
        self.lost = 0

    def __getattr__(self, name):
        return getattr(self._client, name)

    def transact_write_items(self, **kwargs):
        response = self._client.transact_write_items(**kwargs)
        if self.lost == 0:
            self.lost += 1
            raise ReadTimeoutError(endpoint_url="https://dynamodb")
        return response


def test_a_write_that_committed_but_lost_its_answer_is_reported_as_success(store, clock):
    with moto_ledger() as ledger:
        # Given a client that loses the answer of a transaction that committed
        ledger.client = LosesFirstAnswer(ledger.client)
        key = write_snapshot(store, lsn=100)
        # When the snapshot is registered
        result = register_manifest(
            key,
            ledger=ledger,
            store=store,
            clock=clock,
            retry=RetryPolicy(base_delay=0),
            layouts=NATIVE_ONLY,
        )
        # Then the caller hears that it became latest, and it was written once
        assert ledger.client.lost == 1
        assert result.outcome is Outcome.BECAME_LATEST
        lineage = LineageId(stream="orders", partition=3)
        assert [e.seq for e in ledger.list_events(lineage).items] == [1, 2]


def command(lsn=100):
    return RegisterSnapshot(
        stream="orders",
        partition=3,
        lsn=lsn,
        snapshot_id=SID,
        manifest_key="k",
        manifest_digest="d",
        summary=ManifestSummary(epoch=1, file_count=1, total_bytes=1),
    )


def stubbed_commit(error_code, reasons=None):
    client = boto3.client("dynamodb", region_name="us-east-1")
    ledger = DynamoLedger("t", client=client)
    before = LineageState.empty("orders", 3)
    events = decide(before, command(), NOW)
    with Stubber(client) as stub:
        extra = {"modeled_fields": {"CancellationReasons": reasons}} if reasons else {}
        stub.add_client_error(
            "transact_write_items", service_error_code=error_code, response_meta={}, **extra
        )
        ledger.commit(before, events, evolve_all(before, events), request_token="t" * 32)


def test_condition_failure_is_a_lost_race_naming_who_won():
    winner = {"command_id": {"S": "register:other"}}
    with pytest.raises(LostRaceError) as err:
        stubbed_commit(
            "TransactionCanceledException",
            [
                {"Code": "ConditionalCheckFailed"},
                {"Code": "None"},
                {"Code": "ConditionalCheckFailed", "Item": winner},
                {"Code": "None"},
            ],
        )
    assert err.value.committed_command_id == "register:other"


@pytest.mark.parametrize("code", ["TransactionConflict", "ThrottlingError"])
def test_conflict_or_throttle_inside_a_transaction_is_transient(code):
    with pytest.raises(TransientStoreError):
        stubbed_commit("TransactionCanceledException", [{"Code": code}, {"Code": "None"}])


def test_throttled_request_is_transient():
    with pytest.raises(TransientStoreError):
        stubbed_commit("ThrottlingException")


class AlwaysLoses:
    def __init__(self):
        self.loads = 0

    def load(self, lineage, snapshot_keys=()):
        self.loads += 1
        return LineageState.empty("orders", 3)

    def commit(self, before, events, after, *, request_token):
        raise LostRaceError("someone else won", committed_command_id="register:other")

    def get_event(self, lineage, seq):
        return None


def test_the_retry_budget_is_bounded_and_the_error_says_what_to_do():
    ledger = AlwaysLoses()
    sleeps = []
    with pytest.raises(ConcurrencyError, match="lost the race 5 times in a row"):
        execute(ledger, command(), NOW, retry=RetryPolicy(max_attempts=5), sleep=sleeps.append)
    assert ledger.loads == 5
    assert len(sleeps) == 5 and all(0 <= s <= 0.5 for s in sleeps)


def test_other_client_errors_are_not_swallowed():
    with pytest.raises(Exception) as err:
        stubbed_commit("ValidationException")
    assert not isinstance(err.value, ClientError)


def test_a_batch_that_committed_but_lost_its_answer_is_reported_with_each_commands_events(
    store, clock
):
    with moto_ledger() as ledger:
        # Given a client that loses the answer of a transaction that committed
        ledger.client = LosesFirstAnswer(ledger.client)
        keys = [write_snapshot(store, lsn=lsn) for lsn in (100, 300, 200)]
        # When three manifests of one lineage are registered together (one transaction)
        results = register_manifests(
            keys,
            ledger=ledger,
            store=store,
            clock=clock,
            retry=RetryPolicy(base_delay=0),
            layouts=NATIVE_ONLY,
        )
        # Then each hears its own outcome, read back from the events that landed, once
        assert ledger.client.lost == 1
        assert [r.outcome for r in results] == [
            Outcome.BECAME_LATEST,
            Outcome.BECAME_LATEST,
            Outcome.RECORDED,
        ]
        assert [r.attempts for r in results] == [2, 2, 2]
        lineage = LineageId(stream="orders", partition=3)
        assert [e.seq for e in ledger.list_events(lineage).items] == [1, 2, 3, 4, 5]


class RacedAfterFirstLoad:
    """A ledger whose first load is followed by another writer's registration of ``key``."""

    def __init__(self, ledger, register_other):
        self._ledger = ledger
        self._register_other = register_other
        self.raced = False

    def __getattr__(self, name):
        return getattr(self._ledger, name)

    def load(self, *args, **kwargs):
        state = self._ledger.load(*args, **kwargs)
        if not self.raced:
            self.raced = True
            self._register_other()
        return state


def test_a_batch_whose_first_command_another_writer_committed_is_decided_again(store, clock):
    with moto_ledger() as ledger:
        # Given two manifests of one lineage, the first of which another writer registers
        # between the batch's load and its commit (its event lands where ours would)
        first, second = (write_snapshot(store, lsn=lsn) for lsn in (100, 200))
        raced = RacedAfterFirstLoad(
            ledger,
            lambda: register_manifest(
                first,
                ledger=ledger,
                store=store,
                clock=clock,
                combiner=LineageCombiner(),
                layouts=NATIVE_ONLY,
            ),
        )
        # When both are registered together
        results = register_manifests(
            [first, second],
            ledger=raced,
            store=store,
            clock=clock,
            retry=RetryPolicy(base_delay=0),
            layouts=NATIVE_ONLY,
        )
        # Then the batch is not taken for ours: it is decided again, the first a duplicate
        # and the second registered; nothing twice
        assert raced.raced
        assert [r.outcome for r in results] == [Outcome.DUPLICATE, Outcome.BECAME_LATEST]
        lineage = LineageId(stream="orders", partition=3)
        assert [e.seq for e in ledger.list_events(lineage).items] == [1, 2, 3, 4]
