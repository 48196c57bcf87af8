"""docs/kafka-streams.md's throughput trials with working copies and the resident seeder
quote their saved run (docs/bench/kafka-streams-sidecar.json), and the earlier run they are
set against (docs/bench/kafka-streams.json)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = " ".join((REPO / "docs" / "kafka-streams.md").read_text(encoding="utf-8").split())


def _figures(name: str) -> dict:
    return json.loads((REPO / "docs" / "bench" / name).read_text())["kafka_streams"]


NOW, BEFORE = _figures("kafka-streams-sidecar.json"), _figures("kafka-streams.json")


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return f"{low}" if low == high else f"{low}-{high}"


def test_each_interval_line_is_the_saved_run():
    for interval in (5, 15):
        run = {k.split(".", 1)[1]: v for k, v in NOW.items() if k.startswith(f"every_{interval}s.")}
        assert (
            f"every {interval} s: {_span(run['snapshots_made'])} partition snapshots registered "
            f"per trial; median {run['ratio_median']:.3f} (min {run['ratio_min']:.3f}, max "
            f"{run['ratio_max']:.3f})."
        ) in DOC


def test_the_two_runs_baselines_are_quoted_as_saved():
    def rps(figures: dict) -> str:
        values = figures["every_5s.without_rps"] + figures["every_15s.without_rps"]
        return f"{min(values):,}-{max(values):,}"

    assert f"processed {rps(NOW)} records/s without snapshots, against {rps(BEFORE)}" in DOC
    assert NOW["every_5s.ratio_median"] < 0.95  # "still not met every 5 s"
    assert NOW["every_15s.ratio_median"] < NOW["every_5s.ratio_median"]  # "below the 5 s one"


def test_the_sidecars_cpu_bullet_quotes_both_runs():
    assert (
        f"before working copies {BEFORE['every_15s.ratio_median']:.2f} of it with a snapshot "
        f"every 15 s and {BEFORE['every_5s.ratio_median']:.2f} every 5 s on 2 cores; with them, "
        f"on a busier machine, {NOW['every_5s.ratio_median']:.2f} every 5 s"
    ) in DOC
