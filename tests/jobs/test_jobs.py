"""Bootstrap, restore and compaction end to end on a local SparkSession."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jobs_support import (
    Record,
    State,
    check_descriptor_files,
    check_manifest,
    oracle,
    read_state,
    write_processor_snapshot,
)

from jobs.args import JobArgs
from jobs.changelog_gen import GeneratedChangelog, generate_changelog
from jobs.entrypoint import main
from jobs.job import JobResult, run_job

pytestmark = pytest.mark.spark

STREAM = "orders-ktable"
PARTITIONS = (0, 1, 2)


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory) -> tuple[Path, GeneratedChangelog]:
    root = tmp_path_factory.mktemp("store")
    generated = generate_changelog(
        spark,
        root.as_uri(),
        STREAM,
        partitions=len(PARTITIONS),
        rows=6000,
        keys_per_partition=150,
        rows_per_segment=400,
        delete_fraction=0.2,
    )
    return root, generated


def changelog_records(root: Path, partition: int) -> list[Record]:
    records = []
    for path in sorted((root / "changelog" / STREAM / str(partition)).glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            records.append(Record(row["key"], row["value"], row["lsn"], row["op"]))
    return records


def job(
    spark, root: Path, kind: str, job_id: str, target: int | None, bases=None, **more
) -> JobResult:
    args = JobArgs(
        kind=kind,  # type: ignore[arg-type]
        root=root.as_uri(),
        stream=STREAM,
        partitions=PARTITIONS,
        job_id=job_id,
        target_lsn=target,
        bases=bases or {},
        epoch=7,
        **more,
    )
    return run_job(spark, args)


def states(root: Path, result: JobResult) -> dict[int, State]:
    return {p.partition: read_state(root, p.prefix) for p in result.partitions}


def test_generator_writes_puts_deletes_and_reputs_in_layout(store) -> None:
    root, generated = store
    for partition in PARTITIONS:
        records = changelog_records(root, partition)
        # LSNs are dense from 0 and the segments tile them
        assert [r.lsn for r in records] == list(range(len(records)))
        assert generated.segments[partition][0][0] == 0
        assert generated.last_lsn(partition) == len(records) - 1
        ops = [r.op for r in records]
        assert {"put", "delete"} == set(ops)
        # some key is put again after it was deleted
        deleted: set[str] = set()
        reput = False
        for record in records:
            if record.op == "delete":
                deleted.add(record.key)
            elif record.key in deleted:
                reput = True
        assert reput


def test_bootstrap_then_restore_round_trips(spark, store) -> None:
    root, generated = store
    # Given a bootstrap at LSN 1200 of every partition
    boot = job(spark, root, "bootstrap", "boot-1", 1200)
    # Then each partition's snapshot is the replay to 1200, with a valid manifest
    for result in boot.partitions:
        manifest = check_manifest(root, result.prefix)
        assert (manifest.lsn, manifest.epoch, manifest.source.kind) == (1200, 7, "bootstrap")
        assert manifest.source.base_snapshot_id is None
        assert manifest.source.changelog_from_lsn == 0
        assert manifest.snapshot_id == result.snapshot_id
        records = changelog_records(root, result.partition)
        assert read_state(root, result.prefix) == oracle(records, 1200)
    # When it is restored to the latest available LSN
    bases = {p.partition: p.prefix for p in boot.partitions}
    restored = job(spark, root, "restore", "restore-1", None, bases)
    # Then the restore is the full replay, and says what it was built from
    for result in restored.partitions:
        records = changelog_records(root, result.partition)
        assert result.lsn == generated.last_lsn(result.partition)
        assert read_state(root, result.prefix) == oracle(records, result.lsn)
        descriptor = check_descriptor_files(root, result.prefix, "_restore.json")
        assert descriptor["base"] == {
            "snapshot_id": bases[result.partition][-27:-1],
            "lsn": 1200,
            "offsets": None,
        }
        assert descriptor["changelog_from_lsn"] == 1201
        assert result.base_rows == len(read_state(root, bases[result.partition]))
        assert result.changelog_rows == result.lsn - 1200


def test_restore_to_the_snapshot_lsn_returns_the_snapshot(spark, store) -> None:
    root, _ = store
    boot = job(spark, root, "bootstrap", "boot-2", 500)
    bases = {p.partition: p.prefix for p in boot.partitions}
    restored = job(spark, root, "restore", "restore-2", 500, bases)
    for before, after in zip(boot.partitions, restored.partitions, strict=True):
        assert read_state(root, after.prefix) == read_state(root, before.prefix)
        assert after.changelog_rows == 0


def test_compaction_of_compaction_equals_one_compaction(spark, store) -> None:
    root, _ = store
    boot = job(spark, root, "bootstrap", "boot-3", 300)
    base = {p.partition: p.prefix for p in boot.partitions}
    step1 = job(spark, root, "compaction", "compact-a", 900, base)
    step2 = job(
        spark,
        root,
        "compaction",
        "compact-b",
        1700,
        {p.partition: p.prefix for p in step1.partitions},
    )
    direct = job(spark, root, "compaction", "compact-c", 1700, base)
    assert states(root, step2) == states(root, direct)
    for result in (*step1.partitions, *step2.partitions):
        manifest = check_manifest(root, result.prefix)
        assert manifest.source.kind == "compaction"
        assert manifest.source.base_lsn == (300 if result in step1.partitions else 900)
        assert manifest.source.changelog_from_lsn == manifest.source.base_lsn + 1
        assert manifest.source.job_id in {"compact-a", "compact-b"}


def test_small_files_keep_each_partition_in_key_order(spark, store) -> None:
    """Each formulation's output rolls over into several files, in key order throughout
    (the writer sorts nothing: compaction.py hands it each partition in key order)."""
    root, _ = store
    boot = job(spark, root, "bootstrap", "boot-small", 1500, max_rows_per_file=7)
    bases = {p.partition: p.prefix for p in boot.partitions}
    runs = {
        "bootstrap (broadcast, no base)": boot,
        # the base alone, its many files read in any order
        "restore to the base": job(
            spark, root, "restore", "small-0", 1500, bases, max_rows_per_file=7
        ),
        # few changes: merged into the base; many: broadcast against it
        "restore, merged": job(spark, root, "restore", "small-1", 1550, bases, max_rows_per_file=7),
        "restore, broadcast": job(
            spark, root, "restore", "small-2", 1999, bases, max_rows_per_file=7
        ),
    }
    for name, result in runs.items():
        for output in result.partitions:
            assert len(list((root / output.prefix).glob("part-*.parquet"))) > 2, name
            records = changelog_records(root, output.partition)
            assert read_state(root, output.prefix) == oracle(records, output.lsn), name


def test_a_base_read_alone_keeps_key_order_across_its_files(spark, tmp_path) -> None:
    """Spark reads a base's biggest files first; the output is still in key order."""
    state = {f"k{n:03d}": (b"v", n) for n in range(60)}
    base = write_processor_snapshot(tmp_path, STREAM, 0, 99, state, file_rows=40)
    args = JobArgs(
        kind="restore",
        root=tmp_path.as_uri(),
        stream=STREAM,
        partitions=(0,),
        job_id="base-alone",
        target_lsn=99,
        bases={0: base},
    )
    (result,) = run_job(spark, args).partitions
    assert read_state(tmp_path, result.prefix) == state


def test_rerunning_a_restore_job_replaces_its_output(spark, store) -> None:
    root, _ = store
    job(spark, root, "restore", "restore-again", 100)
    again = job(spark, root, "restore", "restore-again", 200)
    for result in again.partitions:
        descriptor = check_descriptor_files(root, result.prefix, "_restore.json")
        assert descriptor["lsn"] == 200


def test_entrypoint_runs_a_job_and_prints_its_result(store, capsys) -> None:
    root, _ = store
    code = main(
        [
            "--kind", "bootstrap", "--root", root.as_uri(), "--stream", STREAM,
            "--partitions", "0-1", "--target-lsn", "50", "--job-id", "cli-1", "--epoch", "3",
        ]
    )  # fmt: skip
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [p["partition"] for p in printed["partitions"]] == [0, 1]
    for partition in printed["partitions"]:
        assert check_manifest(root, partition["prefix"]).epoch == 3
    assert not (root / "_staging").exists() or not any((root / "_staging").iterdir())


def test_a_job_run_again_after_others_reuses_its_generated_code(spark, store) -> None:
    # A local session runs many jobs, each with its own generated classes (LSNs are
    # literals in them). Spark's cache of those classes must hold many jobs' worth, or a
    # job run again after a few others compiles all of its code again.
    root, _ = store
    codegen = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    boot = job(spark, root, "bootstrap", "codegen-base", 900)
    bases = {p.partition: p.prefix for p in boot.partitions}
    job(spark, root, "restore", "codegen-restore-1", 1500, bases)
    for target in (1100, 1200, 1300, 1400):  # full replays: about 24 classes each
        job(spark, root, "restore", f"codegen-replay-{target}", target)
    compiled_before = codegen.METRIC_COMPILATION_TIME().getCount()
    job(spark, root, "restore", "codegen-restore-2", 1500, bases)  # about 38 classes
    assert codegen.METRIC_COMPILATION_TIME().getCount() == compiled_before
