"""docs/jobs.md, "Sizing": its two examples are what the code sends, and every figure it
states is read out of the text and compared with what the code computes or its constant (a
figure the code changes fails here, whatever the sentence around it says)."""

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


NUMBER = r"(\d+(?:\.\d+)?)"


def figures(template: str, text: str = PROSE) -> tuple[float, ...]:
    """The numbers stated where ``text`` reads ``template``, each ``{}`` one number; the
    template must name exactly one place."""
    pattern = NUMBER.join(re.escape(part) for part in template.split("{}"))
    found = re.findall(pattern, text)
    assert len(found) == 1, (template, found)
    one = found[0] if isinstance(found[0], tuple) else (found[0],)
    return tuple(float(n) for n in one)


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
    stated = figures("default capacity ({} vCPU, {} GB, {} GB of disk)")
    assert stated == (DEFAULT.vcpu, DEFAULT.memory_gb, DEFAULT.disk_gb)
    assert figures("one partition of {} MiB ({} MiB of snapshot, {} MiB of changes)") == (
        sum(p.total for p in SMALL) // MIB,
        SMALL[0].base_bytes // MIB,
        SMALL[0].changes_bytes // MIB,
    )
    partitions, gib, share = figures(
        "A restore of {} partitions, {} GiB, one partition holding {}%"
    )
    assert (len(LARGE), LARGE[0].total / (400 * GIB)) == (partitions, share / 100)
    assert round(sum(p.total for p in LARGE) / GIB) == gib
    assert SMALL[0].base_bytes // MIB == 36 and SMALL[0].changes_bytes // MIB == 4
    assert sum(p.total for p in LARGE) // GIB == 399  # 400 GiB less the rounding of 63 parts
    assert LARGE[0].total == int(400 * GIB * 0.9) and len(LARGE) == 64
    small = size_job("restore", SMALL, DEFAULT)
    assert (small.vcpu, small.memory_gb) == (2, 6)
    assert figures("{} vCPU and {} GB in all") == (small.vcpu, small.memory_gb)


def test_what_the_large_example_wants_and_what_it_gets():
    ample = Capacity(10_000, 100_000, 1_000_000)
    wanted = size_job("restore", LARGE, ample)
    assert (wanted.executors, wanted.executor.vcpu, wanted.executor.memory_gb) == (16, 4, 30)
    assert wanted.executor.disk_gb == 200 and wanted.driver == job_sizing.Worker(4, 16, 20)
    assert (wanted.vcpu, wanted.memory_gb, wanted.disk_gb) == (68, 496, 3220)
    stated = figures("driver ({} vCPU, {} GB, {} GB of disk)")
    assert stated == (wanted.vcpu, wanted.memory_gb, wanted.disk_gb)
    assert figures("the rule wants {} executors of {} vCPU, {} GB and {} GB of disk") == (
        wanted.executors,
        wanted.executor.vcpu,
        wanted.executor.memory_gb,
        wanted.executor.disk_gb,
    )
    driver = figures("and a {} vCPU, {} GB driver")
    assert driver == (wanted.driver.vcpu, wanted.driver.memory_gb)
    capped = size_job("restore", LARGE, DEFAULT)
    assert (capped.executors, capped.executor.memory_gb, capped.executor.disk_gb) == (3, 16, 60)
    stated = figures("{} executors of {} GB and {} GB of disk")
    assert stated == (capped.executors, capped.executor.memory_gb, capped.executor.disk_gb)
    raised = size_job("restore", LARGE, Capacity(68, 496, MAX_DISK_GB))
    assert (raised.executors, raised.executor.disk_gb) == (9, 20)
    vcpu, memory_gb, executors, disk_gb = figures(
        "-c emrMaxVcpu={} -c emrMaxMemoryGb={}` it still holds only {} executors, of {} GB"
    )
    # the raised capacity the doc names is the one the large example wants
    assert (vcpu, memory_gb) == (wanted.vcpu, wanted.memory_gb)
    as_documented = size_job("restore", LARGE, Capacity(int(vcpu), int(memory_gb), MAX_DISK_GB))
    assert (as_documented.executors, as_documented.executor.disk_gb) == (executors, disk_gb)
    assert figures("the application's disk cap is a constant, {} GB") == (MAX_DISK_GB,)
    assert MAX_DISK_GB == job_sizing.MAX_DISK_GB == 200
    # "whatever the capacity": the biggest partition's spill alone is over any worker's disk
    [biggest_gib] = figures("the {} GiB partition is merged by one task if it is not split")
    assert biggest_gib == LARGE[0].total // GIB
    assert LARGE[0].total * job_sizing.DISK_PER_INPUT_BYTE > MAX_DISK_GB * GIB


def test_the_rule_in_words_names_the_codes_factors():
    assert job_sizing.BYTES_PER_EXECUTOR_CORE == 2 * GIB
    [gib] = figures("one executor core per {} GiB of input")
    assert gib * GIB == job_sizing.BYTES_PER_EXECUTOR_CORE
    assert job_sizing.EXECUTOR_VCPUS == job_sizing.DRIVER_VCPUS == (1, 2, 4)
    assert figures("Executors of {}, {} or {} vCPU") == job_sizing.EXECUTOR_VCPUS
    assert figures("The driver**: {}, {} or {} vCPU") == job_sizing.DRIVER_VCPUS
    assert job_sizing.MEMORY_PER_INPUT_BYTE == 2 and job_sizing.SPARK_MEMORY_FRACTION == 0.6
    assert figures("times {} for rows in memory, over the {} of the heap") == (
        job_sizing.MEMORY_PER_INPUT_BYTE,
        job_sizing.SPARK_MEMORY_FRACTION,
    )
    per_vcpu = {v: job_sizing.WORKER_MEMORY_GB[v] for v in job_sizing.EXECUTOR_VCPUS}
    least, most_of_one, one, two, four = figures(
        "between {} GB and the most a worker has per vCPU ({} GB for {} and {} vCPU, {} for 4)"
    )
    assert least == min(low / v for v, (low, _, _) in per_vcpu.items())
    assert (one, two) == (1, 2)
    assert most_of_one == per_vcpu[1][1] / 1 == per_vcpu[2][1] / 2
    assert four == per_vcpu[4][1] / 4
    assert job_sizing.DISK_PER_INPUT_BYTE == 1
    assert figures(
        "more (spill and shuffle files, estimated at the input's Parquet bytes), {}-{} GB"
    ) == (
        job_sizing.MIN_DISK_GB,
        job_sizing.MAX_DISK_GB,
    )
    assert job_sizing.DRIVER_BYTES_PER_CORE == 16 * GIB
    assert job_sizing.DRIVER_PARTITIONS_PER_CORE == 16 and job_sizing.DRIVER_GB_PER_VCPU == 4
    gib, partitions = figures("one per {} GiB of input or per {} partitions")
    assert (gib * GIB, partitions) == (
        job_sizing.DRIVER_BYTES_PER_CORE,
        job_sizing.DRIVER_PARTITIONS_PER_CORE,
    )
    assert figures("{} GB per vCPU (its heap") == (job_sizing.DRIVER_GB_PER_VCPU,)
    assert figures("{} GB of disk. - **Within") == (job_sizing.MIN_DISK_GB,)  # the driver's
    assert job_sizing.SHUFFLE_PARTITION_BYTES == 128 * MIB
    [mib] = figures("at least one per {} MiB of input")
    assert mib * MIB == job_sizing.SHUFFLE_PARTITION_BYTES
    assert (job_sizing.OVERHEAD_FRACTION, job_sizing.MIN_OVERHEAD_MB) == (0.1, 384)
    percent, mib = figures("at least {}% of the memory and {} MiB")
    assert (percent / 100, mib) == (job_sizing.OVERHEAD_FRACTION, job_sizing.MIN_OVERHEAD_MB)


def test_deploy_md_says_the_capacity_sizes_jobs_and_its_defaults():
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text("utf-8")
    [row] = [line for line in deploy.splitlines() if line.startswith("| `emrMaxVcpu`")]
    defaults = f"| `{DEFAULTS.emr_max_vcpu}` / `{DEFAULTS.emr_max_memory_gb}` |"
    assert defaults in row
    # the row's link lands on this section: jobs.md has the heading its anchor names
    [anchor] = re.findall(r"\(jobs\.md#([\w-]+)\)", row)
    headings = re.findall(r"^#+ (.+)$", DOC, flags=re.MULTILINE)
    assert anchor in {"-".join(h.lower().split()) for h in headings}
    assert anchor == "sizing"
    assert figures("the disk cap is {} GB", row) == (MAX_DISK_GB,)
