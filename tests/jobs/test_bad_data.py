"""Every bad-data rule fails the job with a message naming the file and the problem."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jobs_support import Record, oracle, read_state, write_processor_snapshot, write_segment

from jobs.args import JobArgs
from jobs.errors import ChangelogError, JobError, SnapshotError
from jobs.job import JobResult, run_job
from jobs.layout import segment_name
from snapledger.core.checksums import compute

pytestmark = pytest.mark.spark


def puts(lsns, key="k") -> list[Record]:
    return [Record(f"{key}{n}", b"v", n, "put") for n in lsns]


# One defect per partition, so that one validation pass (one Spark job) shows them all.
CONTENT_DEFECTS = {
    0: ("duplicate LSNs", [*puts(range(5)), Record("x", b"v", 3, "put")]),
    1: ("LSNs outside the range 0..4", puts([0, 1, 2, 7])),
    2: ("1 row(s) with a null key", [*puts(range(4)), Record(None, b"v", 4, "put")]),
    3: ("1 row(s) with an unknown op", [*puts(range(4)), Record("k", b"v", 4, "upsert")]),
    4: ("1 row(s) with a null LSN", [*puts(range(4)), Record("k", b"v", None, "put")]),
    5: (None, puts(range(5))),
    # Valid, though validation cannot prove these distinct from positions alone: LSNs
    # need not be dense, and rows need not be in LSN order.
    6: (None, puts([0, 2, 4])),
    7: (None, puts([3, 1, 0, 2, 4])),
}
CLEAN = [p for p, (defect, _) in CONTENT_DEFECTS.items() if defect is None]


def bootstrap(
    spark, root: Path, partitions, target=None, bases=None, kind="bootstrap"
) -> JobResult:
    return run_job(
        spark,
        JobArgs(
            kind=kind,
            root=root.as_uri(),
            stream="s",
            partitions=tuple(partitions),
            job_id="bad",
            target_lsn=target,
            bases=bases or {},
        ),
    )


@pytest.fixture(scope="module")
def content_failure(spark, tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("bad-content")
    for partition, (_, records) in CONTENT_DEFECTS.items():
        write_segment(root, "s", partition, 0, 4, records)
    with pytest.raises(ChangelogError) as raised:
        bootstrap(spark, root, CONTENT_DEFECTS)
    return root, str(raised.value)


@pytest.mark.parametrize("partition", [p for p, (d, _) in CONTENT_DEFECTS.items() if d])
def test_bad_rows_name_the_file_and_the_problem(content_failure, partition) -> None:
    root, message = content_failure
    problem = CONTENT_DEFECTS[partition][0]
    file_key = f"changelog/s/{partition}/{segment_name(0, 4)}"
    assert f"{file_key}: {problem}" in message
    assert not [p for p in CLEAN if f"changelog/s/{p}/" in message]  # the clean ones aren't
    assert "\n" not in message
    assert not (root / "snapshots").exists()  # nothing was written


def test_sparse_or_unordered_lsns_are_valid(spark, tmp_path) -> None:
    """Files whose LSNs are not consecutive in file order take the exact distinct count."""
    for partition in (6, 7):
        write_segment(tmp_path, "s", partition, 0, 4, CONTENT_DEFECTS[partition][1])
    bootstrap(spark, tmp_path, [6, 7])
    assert len(list((tmp_path / "snapshots" / "s").glob("*/*/_manifest.json"))) == 2

    write_segment(tmp_path, "s", 8, 0, 4, puts([0, 2, 2, 4]))
    with pytest.raises(ChangelogError) as raised:
        bootstrap(spark, tmp_path, [6, 7, 8])
    assert str(raised.value) == (
        f"bad changelog data: changelog/s/8/{segment_name(0, 4)}: duplicate LSNs "
        "(1 repeated row(s))"
    )


def test_records_applied_are_counted_exactly_in_consecutive_and_sparse_files(
    spark, tmp_path
) -> None:
    # Consecutive files get their count from positions, the others from the exact pass;
    # both must count only the records inside the plan's range, at either end.
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    write_segment(tmp_path, "s", 0, 10, 19, puts(range(10, 20)))
    write_segment(tmp_path, "s", 1, 0, 9, puts([0, 2, 4, 6, 8]))
    write_segment(tmp_path, "s", 1, 10, 19, puts([13, 10, 19, 16]))

    def job(kind: str, target: int, bases=None):
        args = JobArgs(
            kind=kind,  # type: ignore[arg-type]
            root=tmp_path.as_uri(),
            stream="s",
            partitions=(0, 1),
            job_id=f"count-{kind}-{target}",
            target_lsn=target,
            bases=bases or {},
        )
        return {p.partition: p for p in run_job(spark, args).partitions}

    boot = job("bootstrap", 4)
    assert {p: r.changelog_rows for p, r in boot.items()} == {0: 5, 1: 3}  # 0..4; 0, 2, 4
    restored = job("restore", 14, {p: r.prefix for p, r in boot.items()})
    # 5..14; and 6, 8, 10, 13
    assert {p: r.changelog_rows for p, r in restored.items()} == {0: 10, 1: 4}


def test_overlapping_segments_are_named(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    write_segment(tmp_path, "s", 0, 5, 14, puts(range(5, 15)))
    with pytest.raises(
        ChangelogError, match=r"changelog/s/0/0+5-0+14\.parquet: overlaps 0+-0+9\.parquet"
    ):
        bootstrap(spark, tmp_path, [0])


def test_overlapping_segments_after_the_base_are_refused_and_nothing_is_written(
    spark, tmp_path
) -> None:
    # docs/changelog-format.md's example: 0..100 and 50..150 both name LSNs 50..100.
    write_segment(tmp_path, "s", 0, 0, 100, puts(range(101)))
    write_segment(tmp_path, "s", 0, 50, 150, puts(range(50, 151)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 60, {"k1": (b"v", 1)})
    with pytest.raises(
        ChangelogError,
        match=r"0+50-0+150\.parquet: overlaps 0+-0+100\.parquet: LSNs 50\.\.100 are in both",
    ):
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    assert not (tmp_path / "restores").exists()


def test_latest_available_after_a_base_followed_by_a_gap_is_the_base(spark, tmp_path) -> None:
    # As the launch plans it: the segment after the gap is not readable yet.
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    write_segment(tmp_path, "s", 0, 20, 29, puts(range(20, 30)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 9, {"k1": (b"v", 1)})
    result = bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    [restored] = result.partitions
    assert (restored.lsn, restored.changelog_rows, restored.row_count) == (9, 0, 1)


def test_a_gap_inside_the_range_is_named(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    write_segment(tmp_path, "s", 0, 20, 29, puts(range(20, 30)))
    with pytest.raises(
        ChangelogError, match=r"0+20-0+29\.parquet: gap before this segment: LSNs 10\.\.19"
    ):
        bootstrap(spark, tmp_path, [0], target=25)


def test_a_changelog_that_starts_after_the_base_is_a_gap(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 10, 19, puts(range(10, 20)))
    with pytest.raises(ChangelogError, match=r"LSNs 0\.\.9 are missing \(a bootstrap needs"):
        bootstrap(spark, tmp_path, [0])


def test_a_changelog_that_ends_before_the_target_is_named(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    with pytest.raises(
        ChangelogError, match=r"0+9\.parquet: the changelog ends at LSN 9 but the target is 12"
    ):
        bootstrap(spark, tmp_path, [0], target=12)


def test_a_file_that_is_not_a_segment_is_skipped_and_the_restore_succeeds(
    spark, tmp_path, caplog
) -> None:
    # Given a changelog with a misnamed (and unreadable) file beside its segments
    records = puts(range(10))
    write_segment(tmp_path, "s", 0, 0, 9, records)
    (tmp_path / "changelog/s/0/segment-1.parquet").write_bytes(b"not parquet")
    base = write_processor_snapshot(tmp_path, "s", 0, 4, oracle(records, 4))
    # When a restore reads the changelog past its base
    with caplog.at_level(logging.WARNING, logger="jobs.coverage"):
        bootstrap(spark, tmp_path, [0], target=9, bases={0: base}, kind="restore")
    # Then it succeeds with the segments' records, and the log names the file it skipped
    assert read_state(tmp_path, "restores/bad/0/") == oracle(records, 9)
    assert "skipping changelog/s/0/segment-1.parquet: not a segment file name" in caplog.text


def test_a_base_without_manifest_or_with_a_wrong_size_is_refused(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    (tmp_path / prefix / "part-00000.parquet").write_bytes(b"truncated")
    with pytest.raises(
        SnapshotError, match=r"part-00000\.parquet: manifest says \d+ bytes, found 9 bytes"
    ):
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    (tmp_path / prefix / "_manifest.json").unlink()
    with pytest.raises(SnapshotError, match=r"_manifest\.json: missing"):
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")


def test_job_errors_carry_exit_codes() -> None:
    assert ChangelogError("x").exit_code == SnapshotError("x").exit_code == 3
    assert issubclass(ChangelogError, JobError)


def _rewrite_manifest(root: Path, prefix: str, **fields) -> None:
    path = root / prefix / "_manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def test_an_opaque_base_is_refused_naming_its_format_and_nothing_is_published(
    spark, tmp_path
) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    _rewrite_manifest(tmp_path, prefix, format="opaque")
    with pytest.raises(SnapshotError, match=r"_manifest\.json: format is 'opaque'; jobs read only"):
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    assert not list(tmp_path.glob("restores/**/_restore.json"))


def test_a_restore_names_its_base_snapshots_offsets(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    _rewrite_manifest(tmp_path, prefix, offsets={"orders-0": 18213})
    bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    (descriptor,) = tmp_path.glob("restores/**/_restore.json")
    assert json.loads(descriptor.read_text())["base"]["offsets"] == {"orders-0": 18213}


def _file_entry(root: Path, prefix: str) -> tuple[Path, dict]:
    manifest = json.loads((root / prefix / "_manifest.json").read_text())
    (entry,) = manifest["files"]
    return root / prefix / entry["path"], entry


def test_a_base_file_without_the_kv_columns_is_refused_naming_it_and_its_columns(
    spark, tmp_path
) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    path, entry = _file_entry(tmp_path, prefix)
    pq.write_table(pa.table({"k": ["k1"], "v": [b"v"]}), path)  # a processor's own names
    _rewrite_manifest(tmp_path, prefix, files=[{**entry, "size": path.stat().st_size}])
    with pytest.raises(SnapshotError, match=r"part-00000\.parquet: not a kv-parquet file") as err:
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    assert "missing column 'key'" in str(err.value) and "k BYTE_ARRAY STRING" in str(err.value)
    assert not list(tmp_path.glob("restores/**/_restore.json"))


@pytest.mark.parametrize("algorithm", ["sha256", "md5", "crc32c", "crc64nvme"])
def test_a_base_file_that_changed_after_its_checksum_fails_the_job_and_publishes_nothing(
    spark, tmp_path, algorithm
) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    path, entry = _file_entry(tmp_path, prefix)
    written = path.read_bytes()
    stated = compute(algorithm, written)
    _rewrite_manifest(
        tmp_path, prefix, files=[{**entry, "checksum": f"{algorithm}:{stated.s3_form}"}]
    )
    # The right checksum: the restore runs.
    bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    # The same size, other bytes (a value's byte flipped inside a data page): refused.
    changed = written.replace(b"v", b"w", 1)
    assert changed != written and len(changed) == len(written)
    path.write_bytes(changed)
    published = set(tmp_path.glob("restores/**/*"))
    with pytest.raises(SnapshotError, match=r"part-00000\.parquet: the manifest's") as err:
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    assert stated.digest.hex() in str(err.value)
    assert compute(algorithm, changed).digest.hex() in str(err.value)
    assert set(tmp_path.glob("restores/**/*")) == published  # nothing new published


def test_an_unreadable_base_checksum_is_refused_before_spark_runs(spark, tmp_path) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(tmp_path, "s", 0, 4, {"k1": (b"v", 1)})
    _, entry = _file_entry(tmp_path, prefix)
    _rewrite_manifest(tmp_path, prefix, files=[{**entry, "checksum": "sha256:abc"}])
    with pytest.raises(SnapshotError, match=r"part-00000\.parquet: .*sha256"):
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")


def test_a_base_file_spark_cannot_read_is_reported_as_its_checksum_mismatch(
    spark, tmp_path
) -> None:
    write_segment(tmp_path, "s", 0, 0, 9, puts(range(10)))
    prefix = write_processor_snapshot(
        tmp_path, "s", 0, 4, {f"k{i}": (b"v" * 50, 1) for i in range(200)}
    )
    path, entry = _file_entry(tmp_path, prefix)
    written = path.read_bytes()
    stated = compute("sha256", written)
    _rewrite_manifest(tmp_path, prefix, files=[{**entry, "checksum": str(stated)}])
    # The data pages zeroed, the footer kept: the schema passes, Spark's read fails.
    path.write_bytes(b"PAR1" + bytes(len(written) // 2) + written[4 + len(written) // 2 :])
    with pytest.raises(SnapshotError, match=r"part-00000\.parquet: the manifest's sha256") as err:
        bootstrap(spark, tmp_path, [0], bases={0: prefix}, kind="restore")
    assert err.value.__context__ is not None  # raised while Spark's own failure was handled
    assert not list(tmp_path.glob("restores/**/_restore.json"))
