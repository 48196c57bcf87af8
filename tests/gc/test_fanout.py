"""GC past one invocation: a coordinator sends shards, workers run them (gc_fanout.py)."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.models.ledger import LineageId
from snapledger.services.gc import run_gc, run_gc_shard
from snapledger.services.gc_fanout import GcShard
from tests.gc.support import (
    assert_ledger_and_store_agree,
    event_types,
    gc_deps,
    register,
    statuses,
)
from tests.support import create_ledger, local_client

LINEAGES = 7
# Fan out above 2 lineages, 3 lineages to a shard: seven lineages make shards of 3, 3, 1.
CONFIG = GcConfig(gc_fan_out_above_lineages=2, gc_shard_size=3)


class MemoryQueue:
    """The shard queue in memory: each request's bodies; refuses the indexes it is told to."""

    def __init__(self, refuse: list[list[int]] | None = None) -> None:
        self.requests: list[list[str]] = []
        self._refuse = list(refuse or [])

    def send(self, bodies):
        self.requests.append(list(bodies))
        return self._refuse.pop(0) if self._refuse else []

    @property
    def shards(self) -> list[GcShard]:
        return [GcShard.model_validate_json(b) for request in self.requests for b in request]


def populate(ledger, store, clock, lineages: int = LINEAGES) -> None:
    """Five snapshots in each lineage; two of them due once two days have passed."""
    for partition in range(lineages):
        for lsn in (10, 20, 30, 40, 50):
            register(ledger, store, clock, lsn, partition=partition)
    clock.advance(timedelta(days=2))


def deleted_in(ledger, partition: int) -> int:
    return list(statuses(ledger, partition=partition).values()).count("DELETED")


def test_the_coordinator_sends_shards_and_workers_run_them(ledger, store, clock):
    # Given seven lineages with due snapshots and a shard queue
    populate(ledger, store, clock)
    queue = MemoryQueue()
    deps = replace(gc_deps(ledger, store, clock), shards=queue)
    # When the scheduled run coordinates
    report = run_gc(deps, config=CONFIG)
    # Then it sent every lineage once, in shards of three, in one SendMessageBatch, and
    # worked none of them itself
    assert report.complete and report.counts()["errors"] == 0
    assert len(queue.requests) == 1
    assert [len(s.lineages) for s in queue.shards] == [3, 3, 1]
    sent = [lineage for shard in queue.shards for lineage in shard.lineage_ids()]
    assert sent == [LineageId(stream="orders", partition=p) for p in range(LINEAGES)]
    assert {s.run_id for s in queue.shards} == {report.run_id}
    counts = report.counts()
    assert (counts["shards_sent"], counts["lineages_sent"], counts["lineages"]) == (3, 7, 0)
    assert all(deleted_in(ledger, p) == 0 for p in range(LINEAGES))
    # When a worker runs each shard
    for shard in queue.shards:
        done = run_gc_shard(gc_deps(ledger, store, clock), shard, config=CONFIG)
        assert done.complete and done.counts()["errors"] == 0
        assert [r.lineage for r in done.lineages] == shard.lineage_ids()
    # Then every lineage is collected as a single run would
    for partition in range(LINEAGES):
        assert deleted_in(ledger, partition) == 2
        assert_ledger_and_store_agree(ledger, store, partition=partition)


def test_a_small_deployment_stays_in_one_invocation(ledger, store, clock):
    # Given two lineages, at the fan-out threshold
    populate(ledger, store, clock, lineages=2)
    queue = MemoryQueue()
    deps = replace(gc_deps(ledger, store, clock), shards=queue)
    # When the scheduled run runs
    report = run_gc(deps, config=CONFIG)
    # Then it sent nothing and did the work itself
    assert report.complete and queue.requests == []
    assert report.counts()["lineages"] == 2
    assert [deleted_in(ledger, p) for p in range(2)] == [2, 2]


def test_console_runs_never_fan_out(ledger, store, clock):
    # Given more lineages than the threshold and a shard queue
    populate(ledger, store, clock)
    queue = MemoryQueue()
    deps = replace(gc_deps(ledger, store, clock), shards=queue)
    # When the console asks for a dry run, then for one stream's run
    planned = run_gc(deps, config=CONFIG, dry_run=True)
    one_stream = run_gc(deps, config=CONFIG, stream="orders")
    # Then both answered in the invocation, with every lineage in their reports
    assert queue.requests == []
    assert planned.counts()["snapshots_planned_for_deletion"] == 2 * LINEAGES
    assert planned.counts()["snapshots_deleted"] == 0
    assert one_stream.counts()["snapshots_deleted"] == 2 * LINEAGES


def test_a_shard_delivered_twice_and_overlapping_workers_change_nothing_more(ledger, store, clock):
    # Given the coordinator's shards
    populate(ledger, store, clock)
    queue = MemoryQueue()
    run_gc(replace(gc_deps(ledger, store, clock), shards=queue), config=CONFIG)
    first, second, third = queue.shards
    overlapping = GcShard(run_id="overlap", lineages=first.lineages[1:] + second.lineages[:2])
    # When four workers run at once: the first shard twice, the second, and one overlapping
    # both (a redelivery, and a second coordinator's differently cut shards)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(shard: GcShard) -> None:
        try:
            start.wait()
            report = run_gc_shard(gc_deps(ledger, store, clock), shard, config=CONFIG)
            assert report.complete and report.errors == [], report.errors
        except BaseException as exc:
            errors.append(exc)

    workers = [
        threading.Thread(target=work, args=(s,)) for s in (first, first, second, overlapping)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # (a lineage whose writes lost races too often reports it, and is finished by the next
    # delivery: here the third shard's, and the first one's once more)
    for shard in (third, first, second):
        run_gc_shard(gc_deps(ledger, store, clock), shard, config=CONFIG)
    # Then each due snapshot was expired and deleted exactly once, and nothing else
    assert errors == []
    for partition in range(LINEAGES):
        assert deleted_in(ledger, partition) == 2
        kinds = event_types(ledger, partition=partition)
        assert (kinds.count("SnapshotExpiring"), kinds.count("SnapshotDeleted")) == (2, 2)
        assert_ledger_and_store_agree(ledger, store, partition=partition)


def test_out_of_time_while_sending_resumes_after_the_last_lineage_sent(ledger, store, clock):
    # Given 25 lineages: shards of one lineage, ten shards to a request
    for partition in range(25):
        register(ledger, store, clock, 10, partition=partition)
    queue = MemoryQueue()
    deps = replace(gc_deps(ledger, store, clock), shards=queue)
    config = GcConfig(gc_fan_out_above_lineages=2, gc_shard_size=1, gc_workers=1)
    # When the budget runs out after the first request
    first = run_gc(deps, config=config, remaining_seconds=lambda: 0.0 if queue.requests else 99.0)
    # Then the run stopped with ten lineages sent and saved where to resume
    assert not first.complete and first.counts()["lineages_sent"] == 10
    checkpoint = deps.lineages.load_checkpoint()
    assert checkpoint is not None and checkpoint.phase == "lineages"
    assert checkpoint.after == str(queue.shards[-1].lineage_ids()[-1])
    # When the next run has time, then it sends the rest: every lineage exactly once
    second = run_gc(deps, config=config)
    assert second.complete and deps.lineages.load_checkpoint() is None
    sent = [lineage.partition for shard in queue.shards for lineage in shard.lineage_ids()]
    assert sorted(sent) == list(range(25))


def test_a_refused_message_stops_the_sending_and_the_next_run_sends_it(ledger, store, clock):
    # Given four lineages, one to a shard
    for partition in range(4):
        register(ledger, store, clock, 10, partition=partition)
    # When SQS refuses the second message, and again on the retry
    queue = MemoryQueue(refuse=[[1], [0]])
    deps = replace(gc_deps(ledger, store, clock), shards=queue)
    config = GcConfig(gc_fan_out_above_lineages=2, gc_shard_size=1)
    report = run_gc(deps, config=config)
    # Then the run says so and resumes after the one shard before it
    assert not report.complete
    assert len(report.errors) == 1 and "refused twice" in report.errors[0]
    checkpoint = deps.lineages.load_checkpoint()
    assert checkpoint is not None and checkpoint.after == "orders/0"
    # And the next run sends the rest
    again = MemoryQueue()
    assert run_gc(replace(deps, shards=again), config=config).complete
    assert [s.lineage_ids()[0].partition for s in again.shards] == [1, 2, 3]


def test_a_shard_message_must_name_lineages():
    with pytest.raises(ValueError, match="lineages"):
        GcShard.model_validate_json('{"run_id": "r", "lineages": []}')
    with pytest.raises(ValueError, match="stream"):
        GcShard.model_validate_json(
            '{"run_id": "r", "lineages": [{"stream": "../x", "partition": 1}]}'
        )


@pytest.mark.ddblocal
def test_parallel_workers_in_one_invocation_on_the_real_engine(dynamodb_local, store, clock):
    # Given twelve lineages on DynamoDB Local
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    populate(ledger, store, clock, lineages=12)
    # When one run works them four at a time
    deps = gc_deps(ledger, store, clock)
    report = run_gc(deps, config=GcConfig(gc_workers=4))
    # Then it is the end state of a sequential run, reported in HEAD order
    assert report.complete and report.counts()["errors"] == 0
    in_order = [head.lineage for head in deps.lineages.list_heads(limit=100).heads]
    assert [r.lineage for r in report.lineages] == in_order and len(in_order) == 12
    for partition in range(12):
        assert deleted_in(ledger, partition) == 2
        assert_ledger_and_store_agree(ledger, store, partition=partition)
