"""Run chosen data-plane measurements alone: ``python -m bench.dataplane_run``.

``make bench`` runs them all, at sizes that take long on a loaded machine; this runs the
ones named, at the size given, in the same session and with the same checks and timing
(``bench_dataplane.py``), and prints the figures as JSON lines and the scaling table::

    python -m bench.dataplane_run --rows 1000000 --only main skew
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.bench_dataplane import cases_for, scaling_table, session, skew_split_min_rows
from bench.dataplane_cases import fixed_cost, run_case

CHOICES = ("main", "fixed", "4x", "64", "skew")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dataplane_run", description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000, help="as make bench's --rows")
    parser.add_argument("--only", nargs="+", choices=CHOICES, default=list(CHOICES))
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, after one warm-up")
    parser.add_argument("--workdir", type=Path, default=Path(".bench/work"))
    parser.add_argument(
        "--conf", action="append", default=[], help="KEY=VALUE: a Spark setting of the session"
    )
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve()
    spark = session()
    for setting in args.conf:
        key, _, value = setting.partition("=")
        spark.conf.set(key, value)
    rows: list[dict[str, object]] = []
    try:
        if "main" in args.only:
            from bench.bench_dataplane import _main_case_row, _run

            figures = _run(spark, workdir / "dataplane", args.rows)
            print(json.dumps({"main": figures}), flush=True)
            rows.append(_main_case_row(figures))
        if "fixed" in args.only:
            figures = fixed_cost(spark, workdir / "dataplane-tiny")
            print(json.dumps({"fixed": figures}), flush=True)
        shapes = dict(zip(("4x", "64", "skew"), cases_for("default", args.rows), strict=True))
        for name, (case, _) in shapes.items():
            if name in args.only:
                row = run_case(
                    spark,
                    workdir / "dataplane-case",
                    case,
                    rounds=args.rounds,
                    split_min_rows=skew_split_min_rows(case),
                )
                print(json.dumps({name: row}), flush=True)
                rows.append(row)
    finally:
        spark.stop()
    if rows:
        print(scaling_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
