"""The sizing rule (snapledger.core.job_sizing): examples, capacity caps, and every size a
valid EMR Serverless worker configuration within the application's maximum capacity."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core.job_sizing import (
    GIB,
    MIB,
    Capacity,
    JobSize,
    PartitionInput,
    Worker,
    size_job,
    valid_memory_gb,
)

DEFAULT = Capacity(vcpu=16, memory_gb=64, disk_gb=200)  # infra/config.py, constructs/emr.py
AMPLE = Capacity(vcpu=10_000, memory_gb=100_000, disk_gb=1_000_000)

# AWS's table of supported worker configurations, written out again (not imported) so a
# mistake in the module's table shows here.
AWS_MEMORY = {1: (2, 8, 1), 2: (4, 16, 1), 4: (8, 30, 1), 8: (16, 60, 4), 16: (32, 120, 8)}


def restore_input(total: int) -> PartitionInput:
    """A partition whose base holds 90% of its bytes and its changes 10%."""
    return PartitionInput(base_bytes=total - total // 10, changes_bytes=total // 10)


def skewed(total: int, partitions: int, share: float) -> list[PartitionInput]:
    big = int(total * share)
    rest = (total - big) // (partitions - 1)
    return [restore_input(big)] + [restore_input(rest)] * (partitions - 1)


def assert_valid(size: JobSize, capacity: Capacity) -> None:
    for worker in (size.driver, size.executor):
        least, most, step = AWS_MEMORY[worker.vcpu]
        assert least <= worker.memory_gb <= most and (worker.memory_gb - least) % step == 0
        assert 20 <= worker.disk_gb <= 200
        # Spark's overhead (10% of the memory, at least 384 MiB) fits the worker exactly
        assert worker.heap_mb + worker.overhead_mb == worker.memory_gb * 1024
        assert worker.overhead_mb >= max(384, 0.1 * worker.heap_mb)
    assert size.executors >= 1 and size.shuffle_partitions >= 1
    used = (
        size.driver.vcpu + size.executors * size.executor.vcpu,
        size.driver.memory_gb + size.executors * size.executor.memory_gb,
        size.driver.disk_gb + size.executors * size.executor.disk_gb,
    )
    assert used == (size.vcpu, size.memory_gb, size.disk_gb)
    assert used[0] <= capacity.vcpu
    assert used[1] <= capacity.memory_gb
    assert used[2] <= capacity.disk_gb


def test_a_tiny_restore_gets_a_small_driver_and_one_small_executor():
    size = size_job("restore", [restore_input(40 * MIB)], DEFAULT)
    assert size == JobSize(
        driver=Worker(vcpu=1, memory_gb=4, disk_gb=20),
        executor=Worker(vcpu=1, memory_gb=2, disk_gb=20),
        executors=1,
        shuffle_partitions=1,
    )
    assert size.submit_parameters() == [
        "--conf spark.driver.cores=1",
        "--conf spark.driver.memory=3712m",
        "--conf spark.driver.memoryOverhead=384m",
        "--conf spark.emr-serverless.driver.disk=20G",
        "--conf spark.executor.cores=1",
        "--conf spark.executor.memory=1664m",
        "--conf spark.executor.memoryOverhead=384m",
        "--conf spark.emr-serverless.executor.disk=20G",
        "--conf spark.executor.instances=1",
        "--conf spark.dynamicAllocation.initialExecutors=1",
        "--conf spark.dynamicAllocation.maxExecutors=1",
        "--conf spark.sql.shuffle.partitions=1",
    ]


def test_a_medium_restore_gets_a_core_per_2_gib_and_memory_for_its_biggest_partition():
    # 8 GiB over 8 partitions: 4 cores, one 4 vCPU executor; a 1 GiB partition wants
    # 2 x 1 GiB / 0.6 of heap per core, plus 10%: 14.7 -> 15 GB for 4 cores
    size = size_job("restore", [restore_input(GIB)] * 8, DEFAULT)
    assert size == JobSize(Worker(1, 4, 20), Worker(4, 15, 20), 1, 4)


def test_a_huge_job_gets_what_it_wants_when_the_application_has_room():
    size = size_job("restore", [restore_input(400 * GIB // 64)] * 64, AMPLE)
    # 400 GiB: 200 cores wanted, but the merge runs one task per partition: 64 cores
    assert (size.executor.vcpu, size.executors) == (4, 16)
    assert size.driver == Worker(4, 16, 20)
    assert size.executor.memory_gb == 30  # 6.25 GiB partitions: the most a 4 vCPU worker has
    assert size.executor.disk_gb == 25  # its share of the input, 400 / 16 GiB
    assert_valid(size, AMPLE)


def test_the_biggest_partition_decides_the_memory_not_the_total():
    total = 40 * GIB
    even = size_job("restore", [restore_input(total // 64)] * 64, AMPLE)
    lopsided = size_job("restore", skewed(total, 64, 0.9), AMPLE)
    assert (even.executor.vcpu, even.executors) == (lopsided.executor.vcpu, lopsided.executors)
    assert even.executor.memory_gb == 10  # 640 MiB partitions: 4 x 2.08 GiB + 10% = 9.2
    assert even.executor.disk_gb == 20  # its share, 8 GiB: the least there is
    assert lopsided.executor.memory_gb == 30  # one 36 GiB partition: the most there is
    assert lopsided.executor.disk_gb == 36  # that partition's spill


def test_64_partitions_of_a_small_job_get_one_executor_and_a_bigger_driver():
    size = size_job("restore", [restore_input(10 * MIB)] * 64, DEFAULT)
    assert (size.executors, size.executor) == (1, Worker(1, 2, 20))
    assert size.driver == Worker(4, 16, 20)  # it plans 64 partitions on 4 threads


def test_a_merge_uses_no_more_cores_than_partitions_a_join_uses_more():
    one_big = PartitionInput(base_bytes=0, changes_bytes=20 * GIB)
    bootstrap = size_job("bootstrap", [one_big], AMPLE)  # the join: 10 cores wanted
    assert (bootstrap.executor.vcpu, bootstrap.executors) == (4, 3)
    assert bootstrap.shuffle_partitions == 160  # one per 128 MiB
    restore = size_job("restore", [restore_input(20 * GIB)], AMPLE)  # the merge: one task
    assert (restore.executor.vcpu, restore.executors) == (1, 1)
    assert restore.executor.memory_gb == 8  # the most a 1 vCPU worker has


def test_more_changes_than_base_is_the_join_whatever_the_kind():
    backlog = [PartitionInput(base_bytes=GIB, changes_bytes=7 * GIB)]
    assert size_job("compaction", backlog, AMPLE).executor.vcpu == 4  # 4 cores, not 1


def test_the_default_capacity_caps_a_large_skewed_job():
    wanted = size_job("restore", skewed(400 * GIB, 64, 0.9), AMPLE)
    assert (wanted.executor, wanted.executors) == (Worker(4, 30, 200), 16)
    assert (wanted.vcpu, wanted.memory_gb, wanted.disk_gb) == (68, 496, 3220)
    capped = size_job("restore", skewed(400 * GIB, 64, 0.9), DEFAULT)
    # executors capped by the vCPU the driver leaves (12), then memory and disk shared
    assert capped == JobSize(Worker(4, 16, 20), Worker(4, 16, 60), 3, 12)
    assert (capped.vcpu, capped.memory_gb, capped.disk_gb) == (16, 64, 200)


def test_a_small_application_shrinks_the_driver_then_the_executors():
    tight = Capacity(vcpu=2, memory_gb=4, disk_gb=40)
    size = size_job("bootstrap", [PartitionInput(0, 100 * GIB)] * 4, tight)  # 400 GiB
    assert size == JobSize(Worker(1, 2, 20), Worker(1, 2, 20), 1, 3200)
    three = Capacity(vcpu=5, memory_gb=14, disk_gb=200)
    size = size_job("restore", [restore_input(GIB)] * 8, three)
    # the driver (1 vCPU, 4 GB) leaves 4 vCPU, 10 GB: one 4 vCPU executor of 10 GB (15 wanted)
    assert (size.driver, size.executor, size.executors) == (
        Worker(1, 4, 20),
        Worker(4, 10, 20),
        1,
    )
    assert_valid(size, three)


@pytest.mark.parametrize(
    ("kind", "inputs", "message"),
    [
        ("restore", [], "at least one partition"),
        ("restore", [PartitionInput(-1, 0)], "cannot be negative"),
        ("replay", [PartitionInput(1, 0)], "job kind 'replay' is not one of"),
        ("bootstrap", [PartitionInput(5, 10)], "bootstrap starts from empty state"),
    ],
)
def test_nonsense_input_is_refused_saying_why(kind, inputs, message):
    with pytest.raises(ValueError, match=message):
        size_job(kind, inputs, DEFAULT)


@pytest.mark.parametrize(("vcpu", "memory", "disk"), [(1, 64, 200), (16, 3, 200), (16, 64, 39)])
def test_an_application_too_small_for_a_driver_and_an_executor_is_refused(vcpu, memory, disk):
    with pytest.raises(ValueError, match="needs at least 2 vCPU, 4 GB memory and 40 GB disk"):
        Capacity(vcpu, memory, disk)


@pytest.mark.parametrize(
    ("vcpu", "memory", "disk"), [(3, 8, 20), (1, 9, 20), (8, 18, 20), (16, 120, 201), (2, 4, 19)]
)
def test_a_worker_outside_aws_table_is_refused(vcpu, memory, disk):
    with pytest.raises(ValueError, match=r"a .*worker has"):
        Worker(vcpu, memory, disk)


@pytest.mark.parametrize(
    ("vcpu", "wanted", "valid"),
    [(1, 1, 2), (1, 9, 8), (4, 17, 17), (8, 18, 16), (8, 59, 56), (16, 50, 48), (16, 999, 120)],
)
def test_memory_is_rounded_down_to_a_step_of_aws_table(vcpu, wanted, valid):
    assert valid_memory_gb(vcpu, wanted) == valid
    Worker(vcpu, valid, 20)


partition_bytes = st.integers(min_value=0, max_value=2 * 1024 * GIB)


@st.composite
def jobs(draw):
    kind = draw(st.sampled_from(["bootstrap", "compaction", "restore"]))
    count = draw(st.integers(min_value=1, max_value=80))
    bases = st.just(0) if kind == "bootstrap" else partition_bytes
    inputs = draw(
        st.lists(st.builds(PartitionInput, bases, partition_bytes), min_size=count, max_size=count)
    )
    capacity = draw(
        st.builds(
            Capacity,
            st.integers(min_value=2, max_value=400),
            st.integers(min_value=4, max_value=3000),
            st.integers(min_value=40, max_value=20_000),
        )
    )
    return kind, inputs, capacity


@settings(max_examples=400, deadline=None)
@given(jobs())
def test_every_size_is_a_valid_worker_configuration_within_the_capacity(job):
    kind, inputs, capacity = job
    size = size_job(kind, inputs, capacity)
    assert_valid(size, capacity)
    if sum(p.changes_bytes for p in inputs) <= sum(p.base_bytes for p in inputs):
        # the merge: never more executor cores than partitions help it, past one executor
        assert (size.executors - 1) * size.executor.vcpu < len(inputs)
    # and what sparkSubmitParameters carries is that size, one --conf each
    conf = dict(p.removeprefix("--conf ").split("=", 1) for p in size.submit_parameters())
    assert int(conf["spark.executor.instances"]) == size.executors
    assert conf["spark.dynamicAllocation.maxExecutors"] == str(size.executors)
    assert conf["spark.executor.memory"] == f"{size.executor.heap_mb}m"
