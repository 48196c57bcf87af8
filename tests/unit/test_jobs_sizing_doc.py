"""docs/jobs.md, "Sizing": its two examples are what the code sends, its numbers hold."""

from __future__ import annotations

import re
from pathlib import Path

from infra.config import StackConfig
from infra.constructs.emr import MAX_DISK_GB
from snapledger.adapters.emr_serverless import spark_submit_parameters
from snapledger.core import job_sizing
from snapledger.core.job_sizing import GIB, MIB, Capacity, PartitionInput, size_job

DOC = (Path(__file__).resolve().parents[2] / "docs" / "jobs.md").read_text(encoding="utf-8")
SECTION = DOC[DOC.index("## Sizing\n") : DOC.index("## Tests and benchmark\n")]
PROSE = " ".join(SECTION.split())  # the section's words, whatever the line breaks
DEFAULTS = StackConfig()
DEFAULT = Capacity(DEFAULTS.emr_max_vcpu, DEFAULTS.emr_max_memory_gb, MAX_DISK_GB)


def restore_input(total: int) -> PartitionInput:
    return PartitionInput(base_bytes=total - total // 10, changes_bytes=total // 10)


SMALL = [restore_input(40 * MIB)]
LARGE = [restore_input(int(400 * GIB * 0.9))] + [restore_input(40 * GIB // 63)] * 63


def blocks() -> list[str]:
    return re.findall(r"```\n(.*?)```", SECTION, flags=re.DOTALL)


def test_the_examples_are_the_confs_startjobrun_appends():
    small, large = blocks()
    for block, inputs in ((small, SMALL), (large, LARGE)):
        size = size_job("restore", inputs, DEFAULT)
        assert block.splitlines() == size.submit_parameters()
        sent = spark_submit_parameters("s3://bucket/artifacts/jobs.zip", size)
        assert sent.endswith(" " + " ".join(block.splitlines()))


def test_the_examples_inputs_and_totals_are_as_the_doc_says():
    assert (DEFAULT.vcpu, DEFAULT.memory_gb, DEFAULT.disk_gb) == (16, 64, 200)
    assert "default capacity (16 vCPU, 64 GB, 200 GB of disk)" in PROSE
    assert SMALL[0].base_bytes // MIB == 36 and SMALL[0].changes_bytes // MIB == 4
    assert sum(p.total for p in LARGE) // GIB == 399  # 400 GiB less the rounding of 63 parts
    assert LARGE[0].total == int(400 * GIB * 0.9) and len(LARGE) == 64
    small = size_job("restore", SMALL, DEFAULT)
    assert (small.vcpu, small.memory_gb) == (2, 6)
    assert "2 vCPU and 6 GB in all" in PROSE


def test_what_the_large_example_wants_and_what_it_gets():
    ample = Capacity(10_000, 100_000, 1_000_000)
    wanted = size_job("restore", LARGE, ample)
    assert (wanted.executors, wanted.executor.vcpu, wanted.executor.memory_gb) == (16, 4, 30)
    assert wanted.executor.disk_gb == 200 and wanted.driver == job_sizing.Worker(4, 16, 20)
    assert (wanted.vcpu, wanted.memory_gb, wanted.disk_gb) == (68, 496, 3220)
    assert "(68 vCPU, 496 GB, 3220 GB of disk)" in PROSE
    capped = size_job("restore", LARGE, DEFAULT)
    assert (capped.executors, capped.executor.memory_gb, capped.executor.disk_gb) == (3, 16, 60)
    assert "3 executors of 16 GB and 60 GB of disk" in PROSE
    raised = size_job("restore", LARGE, Capacity(68, 496, MAX_DISK_GB))
    assert (raised.executors, raised.executor.disk_gb) == (9, 20)
    assert "-c emrMaxVcpu=68 -c emrMaxMemoryGb=496` it still holds only 9 executors" in PROSE
    assert "200 GB (`MAX_DISK_GB` in `infra/constructs/emr.py`)" in PROSE
    assert MAX_DISK_GB == job_sizing.MAX_DISK_GB == 200


def test_the_rule_in_words_names_the_codes_factors():
    assert job_sizing.BYTES_PER_EXECUTOR_CORE == 2 * GIB
    assert "one executor core per 2 GiB of input" in PROSE
    assert job_sizing.EXECUTOR_VCPUS == job_sizing.DRIVER_VCPUS == (1, 2, 4)
    assert job_sizing.MEMORY_PER_INPUT_BYTE == 2 and job_sizing.SPARK_MEMORY_FRACTION == 0.6
    assert "times 2 for rows in memory, over the 0.6 of the heap" in PROSE
    assert job_sizing.DISK_PER_INPUT_BYTE == 1
    assert job_sizing.DRIVER_BYTES_PER_CORE == 16 * GIB
    assert job_sizing.DRIVER_PARTITIONS_PER_CORE == 16 and job_sizing.DRIVER_GB_PER_VCPU == 4
    assert "one per 16 GiB of input or per 16 partitions" in PROSE
    assert "4 GB per vCPU" in PROSE
    assert job_sizing.SHUFFLE_PARTITION_BYTES == 128 * MIB
    assert "at least one per 128 MiB of input" in PROSE
    assert (job_sizing.OVERHEAD_FRACTION, job_sizing.MIN_OVERHEAD_MB) == (0.1, 384)
    assert "at least 10% of the memory and 384 MiB" in PROSE


def test_deploy_md_says_the_capacity_sizes_jobs_and_its_defaults():
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text("utf-8")
    [row] = [line for line in deploy.splitlines() if line.startswith("| `emrMaxVcpu`")]
    defaults = f"| `{DEFAULTS.emr_max_vcpu}` / `{DEFAULTS.emr_max_memory_gb}` |"
    assert defaults in row
    assert "sizes each job's driver and executors within ([jobs.md](jobs.md#sizing)" in row
    assert f"the disk cap is {MAX_DISK_GB} GB" in row
