"""docs/kafka-streams.md's "Boot growth at 1M, 5M and 20M keys" quotes the three saved runs
(docs/bench/kafka-streams-boot.json): every cell of its table is a saved figure, or the
growth computed from them as ``bench/kafka_boot_growth.py`` does."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.kafka_boot_growth import growth_ratio

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "kafka-streams.md").read_text(encoding="utf-8")
RUNS = json.loads((REPO / "docs" / "bench" / "kafka-streams-boot.json").read_text())["runs"]
SIZES = (1_000_000, 5_000_000, 20_000_000)


def _section() -> str:
    start = DOC.index("## Boot growth at 1M, 5M and 20M keys")
    return DOC[start : DOC.index("\n## ", start + 1)]


def test_each_row_of_the_table_is_a_saved_run():
    rows = re.findall(r"^\| (\d) \| (.+) \|$", _section(), re.MULTILINE)
    assert [int(n) for n, _ in rows] == list(range(1, len(RUNS) + 1))
    for (_, cells), run in zip(rows, RUNS, strict=True):
        boots = " / ".join(f"{run[f'keys_{s}.boot_snapshot_s']:.2f}" for s in SIZES)
        replays = " / ".join(f"{run[f'keys_{s}.boot_replay_s']:.2f}" for s in SIZES)
        growths = [
            f"{growth_ratio(run, a, b):.3f}"
            for a, b in ((SIZES[0], SIZES[1]), (SIZES[0], SIZES[2]), (SIZES[1], SIZES[2]))
        ]
        assert cells.split(" | ") == [boots, replays, *growths]
        assert f"{run['boot_growth_ratio']:.3f}" == growths[0]


def test_the_tail_bound_and_the_claims_in_the_text_hold_in_every_run():
    text = " ".join(_section().split())
    assert all(run["tail_bound_held"] for run in RUNS)
    restored = [f"{RUNS[0][f'keys_{s}.restored_at_boot']:,}" for s in SIZES]
    assert f"{restored[0]}, {restored[1]} and {restored[2]}" in text
    assert all(run["boot_growth_ratio"] < 0 for run in RUNS)  # "it is negative"
    ratios = [run[f"keys_{SIZES[2]}.boot_ratio"] for run in RUNS]
    assert f"{min(ratios):.2f}-{max(ratios):.2f} of a replay" in text
