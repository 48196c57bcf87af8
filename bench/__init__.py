"""Benchmarks: ``make bench`` runs every ``bench/bench_*.py`` module and writes .bench/results.json.

Each module defines ``run(config: BenchConfig) -> dict[str, object]``; figures are ratios
against a baseline measured in the same run, never absolute timings asserted anywhere.
"""
