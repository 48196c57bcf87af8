"""How big an EMR Serverless job's driver and executors are, from the bytes it reads.

The rule, in words (docs/jobs.md, "Sizing"):

1. **Cores from bytes.** An executor core gets about ``BYTES_PER_EXECUTOR_CORE`` (2 GiB)
   of input: base snapshot bytes plus the bytes of the changelog segments in range. When
   the changes are no more than the base (by bytes, as ``jobs/compaction.py`` chooses by
   rows), the job merges each lineage partition's changes into its state in one task
   (``coalesce(1)``), so more cores than partitions do not help it; otherwise (a
   bootstrap, a full replay, a long backlog) it joins broadcast winners over the scan's
   splits and shuffles, which use any number of cores.
2. **Executors of 1, 2 or 4 vCPU**: the smallest that holds those cores, else 4 (EMR
   Serverless's default shape), as many as the cores need.
3. **Memory from the biggest partition.** One task merges (or, after the join, sorts) a
   whole lineage partition, so the biggest partition's bytes decide the memory per core:
   its rows take about ``MEMORY_PER_INPUT_BYTE`` times their Parquet bytes in memory, and
   Spark gives tasks ``SPARK_MEMORY_FRACTION`` of the heap; at least 2 GB and at most the
   worker's maximum per vCPU (beyond that the sort spills to disk).
4. **Disk** holds the executor's share of the input or the biggest partition, whichever is
   more (spill and shuffle files, about as big as the Parquet input): 20-200 GB.
5. **A driver** of 1, 2 or 4 vCPU (one per 16 GiB of input or 16 partitions: it plans
   every partition and checksums every output file, on at most 4 threads and 8 streams),
   4 GB per vCPU (its heap also bounds the winners it broadcasts, and the compaction
   counts or merges instead when they do not fit), and 20 GB of disk.
6. **Within the application's maximum capacity**: the driver leaves room for one smallest
   executor; executors are capped by the vCPU left; then each executor's memory and disk
   are what it wants or its share of what is left, never below a worker's minimum (fewer,
   or smaller, executors when even that does not fit).
7. ``spark.sql.shuffle.partitions``: one per 128 MiB of input on the join path (the
   winners' aggregation), at least one per executor core.

Worker constraints, from AWS's "Understanding application behavior in EMR Serverless",
section "Supported worker configurations"
(https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/app-behavior.html):
1, 2, 4, 8 or 16 vCPU; memory 2-8 GB (1 vCPU), 4-16 GB (2), 8-30 GB (4) in 1 GB steps,
16-60 GB (8) in 4 GB steps, 32-120 GB (16) in 8 GB steps; disk 20-200 GB. Spark's memory
overhead (``spark.driver.memoryOverhead``, ``spark.executor.memoryOverhead``; default 10%
of the memory, at least 384 MB) comes on top of ``spark.*.memory`` and must fit the worker,
so both are set here and add up to the worker's memory exactly. Disk:
``spark.emr-serverless.driver.disk`` and ``spark.emr-serverless.executor.disk`` (AWS's
"Spark job properties" in the same guide, jobs-spark.html).

``MEMORY_PER_INPUT_BYTE`` and the disk estimate are estimates, not measured on EMR
Serverless. Pure: no AWS, no Spark.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from snapledger.job_kinds import Base, job_kind

GIB = 1024**3
MIB = 1024**2
MIB_PER_GB = 1024  # EMR Serverless's GB and Spark's "g" are both 1024 MiB

#: vCPU → (least, most, step) memory in GB of an EMR Serverless worker.
WORKER_MEMORY_GB: dict[int, tuple[int, int, int]] = {
    1: (2, 8, 1),
    2: (4, 16, 1),
    4: (8, 30, 1),
    8: (16, 60, 4),
    16: (32, 120, 8),
}
WORKER_VCPUS = tuple(WORKER_MEMORY_GB)
SMALLEST_VCPU = WORKER_VCPUS[0]
SMALLEST_MEMORY_GB = WORKER_MEMORY_GB[SMALLEST_VCPU][0]
MIN_DISK_GB = 20
MAX_DISK_GB = 200
OVERHEAD_FRACTION = 0.10  # Spark's default memory overhead: 10% of the memory ...
MIN_OVERHEAD_MB = 384  # ... and at least 384 MiB

BYTES_PER_EXECUTOR_CORE = 2 * GIB
EXECUTOR_VCPUS = (1, 2, 4)
MEMORY_PER_INPUT_BYTE = 2.0  # rows in memory (UnsafeRow, sort pointers) per Parquet byte
SPARK_MEMORY_FRACTION = 0.6  # spark.memory.fraction: the heap share tasks execute in
DISK_PER_INPUT_BYTE = 1.0  # spill and shuffle files (compressed) per Parquet byte
DRIVER_BYTES_PER_CORE = 16 * GIB
DRIVER_PARTITIONS_PER_CORE = 16
DRIVER_VCPUS = (1, 2, 4)
DRIVER_GB_PER_VCPU = 4
SHUFFLE_PARTITION_BYTES = 128 * MIB


@dataclass(frozen=True, slots=True)
class Capacity:
    """An EMR Serverless application's maximum capacity (``maximumCapacity``)."""

    vcpu: int
    memory_gb: int
    disk_gb: int

    def __post_init__(self) -> None:
        # A driver and one executor, both the smallest worker.
        vcpu, memory, disk = 2 * SMALLEST_VCPU, 2 * SMALLEST_MEMORY_GB, 2 * MIN_DISK_GB
        if self.vcpu < vcpu or self.memory_gb < memory or self.disk_gb < disk:
            raise ValueError(
                f"the application's maximum capacity ({self.vcpu} vCPU, {self.memory_gb} GB "
                f"memory, {self.disk_gb} GB disk) cannot hold a driver and one executor: it "
                f"needs at least {vcpu} vCPU, {memory} GB memory and {disk} GB disk; raise "
                "the application's maximum capacity"
            )


@dataclass(frozen=True, slots=True)
class Worker:
    """One valid EMR Serverless worker: vCPU, memory and disk."""

    vcpu: int
    memory_gb: int
    disk_gb: int

    def __post_init__(self) -> None:
        if self.vcpu not in WORKER_MEMORY_GB:
            raise ValueError(f"a worker has 1, 2, 4, 8 or 16 vCPU, not {self.vcpu}")
        least, most, step = WORKER_MEMORY_GB[self.vcpu]
        if not least <= self.memory_gb <= most or (self.memory_gb - least) % step:
            raise ValueError(
                f"a {self.vcpu} vCPU worker has {least}-{most} GB of memory in {step} GB "
                f"steps, not {self.memory_gb} GB"
            )
        if not MIN_DISK_GB <= self.disk_gb <= MAX_DISK_GB:
            raise ValueError(
                f"a worker has {MIN_DISK_GB}-{MAX_DISK_GB} GB of disk, not {self.disk_gb}"
            )

    @property
    def heap_mb(self) -> int:
        """``spark.*.memory``: the most that leaves room for Spark's overhead."""
        total = self.memory_gb * MIB_PER_GB
        return min(math.floor(total / (1 + OVERHEAD_FRACTION)), total - MIN_OVERHEAD_MB)

    @property
    def overhead_mb(self) -> int:
        """``spark.*.memoryOverhead``: the rest of the worker (>= 10% of heap, >= 384)."""
        return self.memory_gb * MIB_PER_GB - self.heap_mb


@dataclass(frozen=True, slots=True)
class PartitionInput:
    """What a job reads for one lineage partition: its base snapshot and its changes."""

    base_bytes: int
    changes_bytes: int

    @property
    def total(self) -> int:
        return self.base_bytes + self.changes_bytes


@dataclass(frozen=True, slots=True)
class JobSize:
    """The driver, the executors and the shuffle width of one job run."""

    driver: Worker
    executor: Worker
    executors: int
    shuffle_partitions: int

    def spark_conf(self) -> list[tuple[str, str]]:
        """The Spark settings, in the order ``sparkSubmitParameters`` carries them."""
        d, e, n = self.driver, self.executor, str(self.executors)
        return [
            ("spark.driver.cores", str(d.vcpu)),
            ("spark.driver.memory", f"{d.heap_mb}m"),
            ("spark.driver.memoryOverhead", f"{d.overhead_mb}m"),
            ("spark.emr-serverless.driver.disk", f"{d.disk_gb}G"),
            ("spark.executor.cores", str(e.vcpu)),
            ("spark.executor.memory", f"{e.heap_mb}m"),
            ("spark.executor.memoryOverhead", f"{e.overhead_mb}m"),
            ("spark.emr-serverless.executor.disk", f"{e.disk_gb}G"),
            ("spark.executor.instances", n),
            ("spark.dynamicAllocation.initialExecutors", n),
            ("spark.dynamicAllocation.maxExecutors", n),
            ("spark.sql.shuffle.partitions", str(self.shuffle_partitions)),
        ]

    def submit_parameters(self) -> list[str]:
        """``--conf key=value`` for each setting, for ``sparkSubmitParameters``."""
        return [f"--conf {key}={value}" for key, value in self.spark_conf()]

    @property
    def vcpu(self) -> int:
        return self.driver.vcpu + self.executors * self.executor.vcpu

    @property
    def memory_gb(self) -> int:
        return self.driver.memory_gb + self.executors * self.executor.memory_gb

    @property
    def disk_gb(self) -> int:
        return self.driver.disk_gb + self.executors * self.executor.disk_gb


def size_job(kind: str, inputs: Sequence[PartitionInput], capacity: Capacity) -> JobSize:
    """The size of a ``kind`` job reading ``inputs`` (one per lineage partition) on an
    application of ``capacity`` (see the module's rule); ValueError for nonsense input."""
    _check(kind, inputs)
    total = sum(p.total for p in inputs)
    biggest = max(p.total for p in inputs)
    merges = sum(p.changes_bytes for p in inputs) <= sum(p.base_bytes for p in inputs)
    cores = max(1, math.ceil(total / BYTES_PER_EXECUTOR_CORE))
    if merges:
        cores = min(cores, len(inputs))  # one task per lineage partition
    driver = _driver(total, len(inputs), capacity)
    # What the driver leaves: at least the smallest worker (_driver sees to it).
    left_vcpu = capacity.vcpu - driver.vcpu
    left_memory = capacity.memory_gb - driver.memory_gb
    left_disk = capacity.disk_gb - driver.disk_gb
    vcpu, count = _executor_count(cores, left_vcpu, left_memory, left_disk)
    memory_per_core = biggest * MEMORY_PER_INPUT_BYTE / SPARK_MEMORY_FRACTION
    wanted_memory = math.ceil(vcpu * memory_per_core * (1 + OVERHEAD_FRACTION) / GIB)
    memory = valid_memory_gb(vcpu, min(wanted_memory, left_memory // count))
    wanted_disk = math.ceil(max(biggest, total / count) * DISK_PER_INPUT_BYTE / GIB)
    disk = max(MIN_DISK_GB, min(wanted_disk, MAX_DISK_GB, left_disk // count))
    shuffle = count * vcpu
    if not merges:
        shuffle = max(shuffle, math.ceil(total / SHUFFLE_PARTITION_BYTES))
    return JobSize(driver, Worker(vcpu, memory, disk), count, shuffle)


def _check(kind: str, inputs: Sequence[PartitionInput]) -> None:
    spec = job_kind(kind)  # ValueError naming the kinds there are
    if not inputs:
        raise ValueError("a job reads at least one partition: give each one's input bytes")
    for p in inputs:
        if min(p.base_bytes, p.changes_bytes) < 0:
            raise ValueError(f"input bytes cannot be negative: {p}")
    if spec.base is Base.NONE and any(p.base_bytes for p in inputs):
        raise ValueError(f"a {kind} starts from empty state: its base bytes must be 0")


def _executor_count(cores: int, vcpu: int, memory_gb: int, disk_gb: int) -> tuple[int, int]:
    """The executors' vCPU and count for ``cores`` within what is left: the smallest shape
    of EXECUTOR_VCPUS that holds the cores (else the largest), as many as they need, capped
    by the vCPU left and by the smallest memory and disk each must have; a smaller shape
    when not one fits."""
    wanted = next((v for v in EXECUTOR_VCPUS if v >= cores), EXECUTOR_VCPUS[-1])
    for shape in (v for v in reversed(EXECUTOR_VCPUS) if v <= wanted):
        count = min(
            math.ceil(cores / shape),
            vcpu // shape,
            memory_gb // WORKER_MEMORY_GB[shape][0],
            disk_gb // MIN_DISK_GB,
        )
        if count >= 1:
            return shape, count
    raise AssertionError("the driver leaves room for the smallest executor")


def _driver(total: int, partitions: int, capacity: Capacity) -> Worker:
    """One core per DRIVER_BYTES_PER_CORE or DRIVER_PARTITIONS_PER_CORE, as a 1, 2 or 4
    vCPU worker with DRIVER_GB_PER_VCPU, leaving room for the smallest executor."""
    cores = max(
        math.ceil(total / DRIVER_BYTES_PER_CORE),
        math.ceil(partitions / DRIVER_PARTITIONS_PER_CORE),
    )
    wanted = next((v for v in DRIVER_VCPUS if v >= cores), DRIVER_VCPUS[-1])
    memory_left = capacity.memory_gb - SMALLEST_MEMORY_GB
    vcpu = max(
        v
        for v in DRIVER_VCPUS
        if v <= min(wanted, capacity.vcpu - SMALLEST_VCPU) and WORKER_MEMORY_GB[v][0] <= memory_left
    )
    memory = valid_memory_gb(vcpu, min(DRIVER_GB_PER_VCPU * vcpu, memory_left))
    return Worker(vcpu, memory, MIN_DISK_GB)


def valid_memory_gb(vcpu: int, wanted: int) -> int:
    """The memory of a valid ``vcpu`` worker nearest ``wanted`` from below (its least if
    ``wanted`` is below that)."""
    least, most, step = WORKER_MEMORY_GB[vcpu]
    capped = min(max(wanted, least), most)
    return least + (capped - least) // step * step
