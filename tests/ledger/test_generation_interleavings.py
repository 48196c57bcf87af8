"""Hypothesis: any interleaving of requests, registrations, redeliveries, stale LSNs and time
on a 4-partition stream: a generation completes exactly when every member has counted,
never before, never twice, and both kinds of log stay gapless (invariant 8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.models.events import StreamSnapshotCompleted, StreamSnapshotMemberCounted
from snapledger.models.generations import GenerationStatus
from snapledger.models.ledger import LineageId
from snapledger.services import generation_reads, generations
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import moto_ledger, write_snapshot

STREAM = "orders"
PARTITIONS = (0, 1, 2, 3)
DEADLINE = timedelta(minutes=30)


@dataclass
class ModelGeneration:
    min_lsn: dict[int, int]
    deadline: object
    status: str = "REQUESTED"
    counted: set[int] = field(default_factory=set)


request_op = st.tuples(
    st.just("request"),
    st.dictionaries(st.sampled_from(PARTITIONS), st.sampled_from([150, 250]), max_size=2),
)
register_op = st.tuples(
    st.just("register"),
    st.tuples(
        st.sampled_from(PARTITIONS),
        st.sampled_from([100, 200, 300]),
        st.sampled_from(["newest"] * 4 + ["older", "unrequested"]),
    ),
)
redeliver_op = st.tuples(st.just("redeliver"), st.integers(min_value=0, max_value=50))
tick_op = st.tuples(st.just("tick"), st.sampled_from([1, 1, 10, 31]))
# Every partition of the newest generation, in any order, each with a possibly stale LSN.
round_op = st.tuples(
    st.just("round"),
    st.tuples(
        st.permutations(PARTITIONS),
        st.lists(st.sampled_from([100, 200, 300]), min_size=4, max_size=4),
    ),
)
operations = st.lists(
    st.one_of(request_op, round_op, *[register_op] * 3, redeliver_op, tick_op),
    min_size=1,
    max_size=16,
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
def test_generations_complete_exactly_when_every_member_counted(tmp_path_factory, ops):
    store = FileObjectStore(tmp_path_factory.mktemp("root"))
    clock = ManualClock()
    model: dict[int, ModelGeneration] = {}
    keys: list[str] = []
    with moto_ledger() as ledger:
        streams = DynamoStreamLog(ledger.table_name, client=ledger.client)

        def register(partition: int, lsn: int, g: int) -> None:
            if g < 1:
                return
            key = write_snapshot(store, STREAM, partition, lsn, generation=g)
            keys.append(key)
            answer = register_manifest(
                key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
            )
            expected = _model_count(model.get(g), partition, lsn, clock.now())
            assert answer.generation_counted is expected, answer.generation_reason

        for op, arg in [("request", {}), *ops]:  # most examples start with a request
            now = clock.now()
            if op == "request":
                for g in model.values():
                    if g.status == "REQUESTED":
                        g.status = "FAILED"  # superseded
                generations.request_stream_snapshot(
                    streams, STREAM, PARTITIONS, clock=clock, min_lsn=arg, deadline=now + DEADLINE
                )
                model[len(model) + 1] = ModelGeneration(arg, now + DEADLINE)
            elif op == "round":
                order, lsns = arg
                for partition, lsn in zip(order, lsns, strict=True):
                    register(partition, lsn, len(model))
            elif op == "register":
                partition, lsn, which = arg
                newest = len(model)
                register(
                    partition, lsn, {"newest": newest, "older": newest - 1}.get(which, newest + 1)
                )
            elif op == "redeliver":
                if keys:
                    key = keys[arg % len(keys)]
                    before = streams.get_head(STREAM)
                    register_manifest(
                        key,
                        ledger=ledger,
                        store=store,
                        clock=clock,
                        streams=streams,
                        layouts=NATIVE_ONLY,
                    )
                    assert streams.get_head(STREAM) == before  # a redelivery changes nothing
            else:
                clock.advance(timedelta(minutes=arg))
        best = max((len(g.counted) for g in model.values()), default=0)
        event(f"most members counted: {best}")
        _check(ledger, streams, model)


def _model_count(g: ModelGeneration | None, partition: int, lsn: int, now) -> bool:
    if g is None or g.status != "REQUESTED":
        return False
    if now > g.deadline:
        g.status = "FAILED"
        return False
    if partition in g.counted or lsn < g.min_lsn.get(partition, 0):
        return False
    g.counted.add(partition)
    if g.counted == set(PARTITIONS):
        g.status = "COMPLETED"
    return True


def _check(ledger, streams, model: dict[int, ModelGeneration]) -> None:
    events = streams.list_events(STREAM, limit=1000).items if model else []
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "stream log has a gap"
    for number, expected in model.items():
        record = generation_reads.get_generation(streams, STREAM, number)
        assert record.status is GenerationStatus(expected.status)
        assert set(record.members) == expected.counted
        counted = [
            e.seq
            for e in events
            if isinstance(e, StreamSnapshotMemberCounted) and e.generation == number
        ]
        completed = [
            e for e in events if isinstance(e, StreamSnapshotCompleted) and e.generation == number
        ]
        assert len(counted) == len(expected.counted), "a member counted twice"
        assert len(completed) == (1 if expected.status == "COMPLETED" else 0)
        if completed:
            assert completed[0].seq > max(counted), "completed before every member counted"
            assert {m.partition for m in completed[0].members} == set(PARTITIONS)
    for partition in PARTITIONS:
        lineage = LineageId(stream=STREAM, partition=partition)
        seqs = [e.seq for e in ledger.list_events(lineage, limit=1000).items]
        assert seqs == list(range(1, len(seqs) + 1)), f"lineage {partition} has a gap"
