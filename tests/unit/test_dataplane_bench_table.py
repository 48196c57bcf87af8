"""The data-plane bench's scaling table takes the main comparison's row, which has no split
columns (they are the scaling cases' alone): `make bench` crashed on it once."""

from __future__ import annotations

from bench.bench_dataplane import _TABLE_KEYS, _main_case_row, scaling_table


def test_the_main_comparisons_row_has_no_split_columns_and_the_table_renders_it():
    figures = {"rows": 5_000_000, "state_rows": 562_423}
    figures |= {key: 1.5 for key in _TABLE_KEYS[2:] if "split" not in key}
    row = _main_case_row(figures)
    assert row["case"] and row["state_rows"] == 562_423
    assert not [key for key in row if "split" in key]
    assert "562423" in scaling_table([row])
