"""docs/retention.md's table of GC's requests with sharing is the saved run
(docs/bench/gc-shared.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "retention.md").read_text(encoding="utf-8")
RUN = json.loads((REPO / "docs" / "bench" / "gc-shared.json").read_text())["gc_shared"]


def test_the_table_is_the_saved_run():
    rows = re.findall(
        r"^\| ([0-9,]+) \| ([0-9,]+) \| (\d+) \((\d+)\) \| (\d+) \((\d+)\) \| ([0-9.]+) \|$",
        DOC,
        re.MULTILINE,
    )
    assert [r[0].replace(",", "") for r in rows] == list(RUN)
    for row, figures in zip(rows, RUN.values(), strict=True):
        assert row[1:] == (
            f"{figures['deleted']:,}",
            str(figures["s3_requests"]),
            str(figures["s3_floor"]),
            str(figures["ddb_requests"]),
            str(figures["ddb_floor"]),
            str(figures["gc_shared_requests_vs_floor"]),
        )


def test_the_text_says_what_the_counts_show():
    text = " ".join(DOC.split())
    assert RUN["10"]["gc_shared_requests_vs_floor"] <= 1.0  # "at its floor"
    big = RUN["1000"]
    assert big["gc_shared_requests_vs_floor"] > 1.1  # "not met"
    assert f"({big['ddb_by_call']['TransactWriteItems']} against 40 at 1,000)" in text
    assert big["ddb_by_call"]["BatchGetItem"] > 0 and big["s3_requests"] - big["s3_floor"] <= 1


@pytest.mark.ddblocal
def test_the_bench_runs_and_ten_snapshots_are_at_the_floor():
    from bench.bench_gc_shared import measure

    figures = measure(10)
    assert figures["deleted"] == 9 and figures["keys_deleted"] == 26
    assert figures["gc_shared_requests_vs_floor"] <= 1.0


def test_readmes_bench_row_is_the_saved_run():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| `gc_shared.N.")]
    for size, figures in RUN.items():
        label = f"{int(size):,}"
        assert f"{label}: {figures['gc_shared_requests_vs_floor']}" in row, size
