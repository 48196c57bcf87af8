"""docs/jobs.md's production-shapes table quotes the saved run
(docs/bench/dataplane-shapes.json): every cell and ratio of it is the run's."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "jobs.md").read_text(encoding="utf-8")
RUN = json.loads((REPO / "docs" / "bench" / "dataplane-shapes.json").read_text())
CASES = {"5M x 4": "main", "20M x 4": "4x", "20M x 64": "64", "5M x 4, 90% in one": "skew"}


def _section() -> str:
    start = DOC.index("### The data plane at the production shapes, in CPU seconds")
    return DOC[start : DOC.index("\n### ", start + 1)]


def _spread(figures: dict, key: str) -> str:
    return f"{figures[key]} [{figures[key + '_min']}-{figures[key + '_max']}]"


def test_each_row_is_the_saved_run():
    rows = re.findall(r"^\| ([0-9]+M x [^|]+?) \| (.+) \|$", _section(), re.MULTILINE)
    assert [name for name, _ in rows] == list(CASES)
    for name, cells in rows:
        figures = RUN[CASES[name]]
        assert [c.strip() for c in cells.split("|")] == [
            _spread(figures, "full_replay_cpu_s"),
            _spread(figures, "restore_cpu_s"),
            str(figures["restore_speedup_ideal"]),
            str(figures["restore_speedup_vs_ideal_cpu"]),
            str(figures["restore_cpu_us_per_row_read"]),
            str(figures["restore_speedup_vs_ideal"]),
        ], name


def test_the_ratios_in_the_text_are_the_saved_runs():
    text = " ".join(_section().split())
    main, fixed, skew = RUN["main"], RUN["fixed"], RUN["skew"]
    assert (
        f"{main['compaction_vs_duckdb_cpu']} by CPU ({main['compaction_vs_duckdb']} by wall)"
        in text
    )
    cpu, wall = (
        fixed["job_fixed_cost_vs_tiny_write_floor_cpu"],
        fixed["job_fixed_cost_vs_tiny_write_floor"],
    )
    assert f"{cpu} by CPU ({wall} by wall): met" in text and cpu <= 1.5
    assert (
        f"{skew['restore_split_cpu_s']} CPU s, ÷ ideal {skew['restore_split_speedup_vs_ideal_cpu']}"
        in text
    )
    assert RUN["4x"]["restore_speedup_vs_ideal_cpu"] >= 0.9  # "20M x 4 meets the bar"
    assert f"({RUN['4x']['restore_speedup_vs_ideal_cpu']})" in text


def test_readmes_bench_row_quotes_the_saved_run():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| `dataplane.scaling` |")]
    for key in ("4x", "64", "skew"):
        assert str(RUN[key]["restore_speedup_vs_ideal_cpu"]) in row, key
