"""Run the benchmarks: ``python -m bench [--only NAME ...] [--rows N] [--dataplane-cases
none|default|all]``."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(".bench/results.json")


@dataclass(frozen=True)
class BenchConfig:
    """What every benchmark module receives."""

    rows: int
    workdir: Path
    dataplane_cases: str = "default"


def _modules(only: list[str]) -> list[str]:
    names = sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    if only:
        names = [n for n in names if n.removeprefix("bench_") in only or n in only]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("--only", nargs="*", default=[], help="module names, e.g. ledger dataplane")
    parser.add_argument(
        "--rows", type=int, default=5_000_000, help="changelog rows for data-plane runs"
    )
    parser.add_argument(
        "--dataplane-cases",
        choices=("none", "default", "all"),
        default="default",
        help="data-plane scaling cases: default 4x rows, 64 partitions, 90%% skew; "
        "all adds 10x rows and the memory-bound case",
    )
    args = parser.parse_args(argv)
    workdir = Path(".bench/work")
    workdir.mkdir(parents=True, exist_ok=True)
    config = BenchConfig(rows=args.rows, workdir=workdir, dataplane_cases=args.dataplane_cases)
    results: dict[str, object] = {}
    if RESULTS.exists():
        results = json.loads(RESULTS.read_text())
    results["_run"] = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
    }
    failed = False
    for name in _modules(args.only):
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        try:
            figures = importlib.import_module(f"bench.{name}").run(config)
        except Exception as exc:  # a failed benchmark is reported, the others still run
            print(f"   FAILED: {exc!r}", file=sys.stderr)
            failed = True
            continue
        results[name.removeprefix("bench_")] = figures
        for key, value in figures.items():
            shown = f"{value:.3f}" if isinstance(value, float) else str(value)
            print(f"   {key:<40} {shown}")
        print(f"   ({time.perf_counter() - started:.1f}s)", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True))
    print(f"results written to {RESULTS}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
