"""docs/fluss.md's measures quote their saved run (docs/bench/fluss.json), and the run says
what the doc says of it: the restarts were the cases they are named, registration at its
floor, ZooKeeper's requests at theirs."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = " ".join((REPO / "docs" / "fluss.md").read_text(encoding="utf-8").split())
SAVED = json.loads((REPO / "docs" / "bench" / "fluss.json").read_text())
RESTART, REQUESTS = SAVED["fluss_restart"], SAVED["fluss_requests"]
EARLIER = SAVED["fluss_restart_earlier_run"]


def test_each_restart_line_is_the_saved_run():
    for size in ("1M", "5M"):
        run = RESTART[size]
        assert (
            f"at {size} rows {run['from_snapshot_s']:.2f} s from the latest snapshot against "
            f"{run['whole_log_s']:.2f} s replaying the whole log ({run['snapshot_vs_log']:.3f}; "
            f"by the tablet server's CPU {run['from_snapshot_cpu_s']:.2f} against "
            f"{run['whole_log_cpu_s']:.2f} s, {run['snapshot_vs_log_cpu']:.3f})"
        ) in DOC
        # "each bucket downloading its snapshot in the first case and none in the second"
        assert (run["from_snapshot_downloads"], run["whole_log_downloads"]) == (3, 0)
        assert run["from_snapshot_s"] < run["whole_log_s"]
    assert f"alone take {RESTART['start_s']:.2f} s ({RESTART['start_cpu_s']:.2f} CPU s)" in DOC
    for run in (RESTART, EARLIER):  # "its CPU grows with the rows faster than its wall time"
        cpu = run["5M"]["whole_log_cpu_s"] / run["1M"]["whole_log_cpu_s"]
        assert cpu > run["5M"]["whole_log_s"] / run["1M"]["whole_log_s"]
        assert run["5M"]["whole_log_downloads"] == 0 and run["5M"]["from_snapshot_downloads"] == 3


def test_the_earlier_run_is_quoted_as_saved():
    wall = f"{EARLIER['1M']['snapshot_vs_log']:.3f} and {EARLIER['5M']['snapshot_vs_log']:.3f}"
    cpu = (
        f"{EARLIER['1M']['snapshot_vs_log_cpu']:.3f} and {EARLIER['5M']['snapshot_vs_log_cpu']:.3f}"
    )
    assert (
        f"An earlier run of the same measure on this busy machine: {wall} by wall, {cpu} by CPU"
        in DOC
    )


def test_registration_is_quoted_at_its_floor():
    runs = [REQUESTS[f"register_{n}"] for n in (10, 100, 1000, 5000)]
    assert all(r["s3_requests"] == r["s3_floor"] for r in runs)
    files = [r["files"] for r in runs]
    assert (
        f"{runs[0]['s3_requests']} requests for a snapshot of {files[0]:,}, {files[1]:,} or "
        f"{files[2]:,} files and {runs[3]['s3_requests']} for {files[3]:,}"
    ) in DOC


def test_gc_lines_are_the_saved_run():
    runs = [REQUESTS[f"gc_{n}"] for n in (10, 100, 1000)]

    def three(field: str) -> str:
        a, b, c = (f"{r[field]:,}" for r in runs)
        return f"{a}, {b} and {c}"

    assert f"S3 {three('s3_requests')} requests against floors of {three('s3_floor')}" in DOC
    assert f"ZooKeeper {three('zookeeper_requests')}, its floor" in DOC
    assert all(r["zookeeper_requests"] == r["zookeeper_floor"] for r in runs)
    assert f"DynamoDB {three('ddb_requests')} against {three('ddb_floor')}" in DOC
    ratios = ", ".join(f"{r['ddb_vs_floor']:.3f}" for r in runs)
    assert f"({ratios}: GC's per-command loads" in DOC


def test_the_readme_rows_quote_the_saved_run():
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    one, five = RESTART["1M"], RESTART["5M"]
    assert (
        f"1M rows: {one['snapshot_vs_log']:.3f} (CPU {one['snapshot_vs_log_cpu']:.3f}); "
        f"5M rows: {five['snapshot_vs_log']:.3f} (CPU {five['snapshot_vs_log_cpu']:.3f}) "
        f"(one run, saved in docs/bench/fluss.json; an earlier run: "
        f"{EARLIER['1M']['snapshot_vs_log']:.3f} and {EARLIER['5M']['snapshot_vs_log']:.3f})"
    ) in readme
    gc = [REQUESTS[f"gc_{n}"] for n in (10, 100, 1000)]
    assert all(r["s3_requests"] == r["s3_floor"] for r in gc[:2])
    assert f"S3 {gc[2]['s3_requests']} against {gc[2]['s3_floor']} at 1,000" in readme
    ratios = ", ".join(f"{r['ddb_vs_floor']:.3f}" for r in gc)
    assert f"DynamoDB {ratios} (one run" in readme
