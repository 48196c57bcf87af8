"""A stream restored to a generation, in one job, equals each partition's full replay to its
target, from each member snapshot: request → SnapshotWriter(generation) → registration
(counts, completes) → launch from {generation: 1} → the Spark job → SnapshotReader."""

from __future__ import annotations

import pytest
from jobs_support import Record, oracle, write_segment

from jobs.args import parse_job_args
from jobs.job import run_job
from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client import SnapshotReader, SnapshotWriter
from snapledger.clock import ManualClock
from snapledger.job_arguments import job_arguments
from snapledger.models.requests import LaunchRequest
from snapledger.services.generations import request_stream_snapshot
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.registration import register_manifests
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import FakeRunner, make_runtime, moto_ledger

pytestmark = pytest.mark.spark

PARTITIONS = (0, 1, 2, 3)
MEMBER_LSN = {0: 40, 1: 55, 2: 70, 3: 85}  # where each processor snapshotted
TARGETS = {1: 90}  # partition 1 to LSN 90, the others to the end (119)


def records_of(partition: int) -> list[Record]:
    return [
        Record(
            lsn=n,
            key=f"k{(n * (partition + 3)) % 17:02d}",
            value=None if n % 11 == 0 else f"p{partition}-{n}".encode(),
            op="delete" if n % 11 == 0 else "put",
        )
        for n in range(120)
    ]


def test_a_stream_restored_to_a_generation_equals_each_partitions_replay(spark, tmp_path):
    clock = ManualClock()
    store = FileObjectStore(tmp_path)
    with moto_ledger() as ledger:
        rt = make_runtime(ledger, store, clock, runner=FakeRunner())
        streams: DynamoStreamLog = rt.streams
        request_stream_snapshot(streams, "orders", PARTITIONS, clock=clock, min_lsn={3: 80})
        keys = []
        for partition in PARTITIONS:
            records = records_of(partition)
            write_segment(tmp_path, "orders", partition, 0, 59, records[:60])
            write_segment(tmp_path, "orders", partition, 60, 119, records[60:])
            state = oracle(records, MEMBER_LSN[partition])
            written = SnapshotWriter(tmp_path.as_uri(), "orders", partition).write(
                MEMBER_LSN[partition],
                1,
                [(key, value) for key, (value, _) in state.items()],
                offsets={f"orders-{partition}": MEMBER_LSN[partition] + 1},
                generation=1,
            )
            keys.append(written.manifest_key)
        answers = register_manifests(
            keys, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
        )
        assert [a.generation_counted for a in answers] == [True] * 4
        assert streams.get_generation("orders", 1).status.value == "COMPLETED"

        request = LaunchRequest.model_validate(
            {
                "action": "restore",
                "stream": "orders",
                "from": {"generation": 1},
                "target_lsns": TARGETS,
            }
        )
        deps = LaunchDeps(
            ledger=ledger, jobs=rt.jobs, runner=rt.runner, store=store, clock=clock, streams=streams
        )
        result = launch(request, request_id="stream-restore", deps=deps)
        spec = rt.runner.started[result.job.job_id]
        run_job(spark, parse_job_args(job_arguments(spec)))

    reader = SnapshotReader(tmp_path.as_uri())
    # generation.json finds every member from the bucket alone, each file checked
    members = reader.open_generation("orders")
    assert {p: m.lsn for p, m in members.items()} == MEMBER_LSN
    assert reader.generation_pointer("orders").generation == 1
    for partition in PARTITIONS:
        records = records_of(partition)
        target = TARGETS.get(partition, 119)
        opened = reader.open_restore(result.job.job_id, partition)
        got = {row["key"]: (row["value"], row["lsn"]) for row in opened.to_arrow().to_pylist()}
        assert got == oracle(records, target), f"partition {partition}"
        assert opened.lsn == target
        assert opened.descriptor.base.lsn == MEMBER_LSN[partition]
        assert opened.descriptor.base.offsets == {f"orders-{partition}": MEMBER_LSN[partition] + 1}
