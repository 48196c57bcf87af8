"""The data-plane benchmark's cases build the shapes they name, and its fixed-cost and
scaling measurements run end to end at a tiny size (their figures are not asserted:
speed is measured in benchmarks only)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.bench_dataplane import scaling_table
from bench.dataplane_cases import SEGMENTS_PER_PARTITION, Case, fixed_cost, generate, run_case

pytestmark = pytest.mark.spark


def test_a_skewed_case_puts_its_share_in_partition_0_with_dense_lsns(spark, tmp_path) -> None:
    case = Case(rows=4000, partitions=4, skew=0.9)
    assert case.rows_of() == [3600, 133, 133, 133]
    generated = generate(spark, tmp_path, case)
    assert generated.partitions == (0, 1, 2, 3)
    for partition, rows in enumerate(case.rows_of()):
        folder = tmp_path / "changelog" / "bench" / str(partition)
        lsns = [
            lsn
            for path in sorted(folder.glob("*.parquet"))
            for lsn in pq.read_table(path, columns=["lsn"]).column("lsn").to_pylist()
        ]
        assert lsns == list(range(rows)), f"partition {partition}"
        assert len(generated.segments[partition]) == SEGMENTS_PER_PARTITION
    assert not (tmp_path / "changelog" / "bench-hot").exists() or not any(
        (tmp_path / "changelog" / "bench-hot").iterdir()
    )


def test_a_case_checks_restore_against_full_replay_and_reports_its_row(spark, tmp_path) -> None:
    row = run_case(spark, tmp_path / "case", Case(rows=2000, partitions=3), rounds=1, warm_up=0)
    assert row["case"] == "2,000 x 3"
    assert row["restore_speedup_ideal"] > 1  # the restore reads fewer rows than the replay
    assert 0 < int(row["state_rows"]) <= 2000  # type: ignore[call-overload]
    assert set(row["restore_stage_seconds"]) >= {"bases_and_plans", "compact_and_write"}  # type: ignore[arg-type]
    table = scaling_table([row])
    assert "2,000 x 3" in table and "vs ideal" in table


def test_fixed_cost_reports_a_tiny_restore_against_an_empty_job(spark, tmp_path: Path) -> None:
    figures = fixed_cost(spark, tmp_path / "tiny", rounds=1)
    assert 0 < int(figures["job_fixed_cost_rows_read"]) < 8000  # type: ignore[call-overload]
    assert float(figures["job_fixed_cost_vs_empty_job"]) > 0  # type: ignore[arg-type]


def test_a_case_reports_cpu_and_wall_medians_with_their_spread(spark, tmp_path) -> None:
    row = run_case(spark, tmp_path / "case", Case(rows=2000, partitions=2), rounds=3, warm_up=0)
    for name in ("full_replay", "restore"):
        for unit in ("s", "cpu_s"):
            low, median, high = (row[f"{name}_{unit}{end}"] for end in ("_min", "", "_max"))
            assert 0 < low <= median <= high  # type: ignore[operator]
    assert float(row["restore_speedup_vs_ideal_cpu"]) > 0  # type: ignore[arg-type]
    assert "vs ideal cpu" in scaling_table([row])


def test_interleaved_rounds_run_each_action_in_turn_after_the_warm_up() -> None:
    from bench.dataplane_timing import Spread, interleaved

    calls: list[str] = []
    ticks = iter(range(100))

    def clock() -> float:
        return float(next(ticks))

    timed = interleaved(
        {
            "a": (lambda: calls.append("a") or len(calls), clock),
            "b": (lambda: calls.append("b"), clock),
        },
        rounds=3,
        warm_up=1,
    )
    assert calls == ["a", "b"] * 4
    assert timed["a"][1] == 7  # the last run's result
    assert timed["a"][0].cpu == Spread(1.0, 1.0, 1.0)  # each run read the clock twice
    assert Spread.of([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0)


def test_a_skewed_case_also_times_its_restore_split_and_checks_it_first(spark, tmp_path) -> None:
    from bench.bench_dataplane import skew_split_min_rows

    case = Case(rows=4000, partitions=4, skew=0.9)
    assert skew_split_min_rows(case) == 40 and skew_split_min_rows(Case(rows=4000)) is None
    row = run_case(spark, tmp_path / "case", case, rounds=1, warm_up=0, split_min_rows=40)
    assert row["split_min_rows"] == 40
    assert float(row["restore_split_cpu_s"]) > 0  # type: ignore[arg-type]
    assert float(row["restore_split_speedup_vs_ideal_cpu"]) > 0  # type: ignore[arg-type]
    # the split restore's output was checked equal to the full replay's: its hot partition
    # is in several files
    hot = sorted((tmp_path / "case" / "restores" / "restore-90-split" / "0").glob("part-*"))
    assert len(hot) > 1
