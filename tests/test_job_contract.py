"""What the launcher sends is what the Spark entry point accepts."""

from __future__ import annotations

from jobs.args import parse_job_args
from snapledger.job_arguments import job_arguments
from snapledger.models.jobs import PartitionPlan
from snapledger.ports import JobRunSpec

SID = "01J00000000000000000000000"


def test_restore_arguments_parse_into_the_same_job():
    base = f"snapshots/orders/3/{99:020d}-{SID}/"
    spec = JobRunSpec(
        job_id="restore-abc",
        kind="restore",
        stream="orders",
        root="file:///tmp/root",
        partitions=[
            PartitionPlan(
                partition=3,
                base_snapshot_id=SID,
                base_lsn=99,
                base_prefix=base,
                target_lsn=299,
                epoch=4,
            )
        ],
    )
    args = parse_job_args(job_arguments(spec))
    assert (args.kind, args.root, args.stream, args.job_id) == (
        "restore",
        "file:///tmp/root",
        "orders",
        "restore-abc",
    )
    assert args.partitions == (3,) and args.target_lsn == 299 and args.epoch == 4
    assert dict(args.bases) == {3: base}


def test_partitions_with_different_targets_run_each_to_its_own():
    spec = JobRunSpec(
        job_id="bootstrap-abc",
        kind="bootstrap",
        stream="orders",
        root="s3://bucket",
        partitions=[PartitionPlan(partition=p, target_lsn=100 + p) for p in (2, 0, 1)],
    )
    args = parse_job_args(job_arguments(spec))
    assert args.partitions == (0, 1, 2) and args.target_lsn is None and args.bases == {}
    assert args.targets == {0: 100, 1: 101, 2: 102}
    assert [args.target_for(p) for p in (0, 1, 2)] == [100, 101, 102]
