"""docs/kafka-streams.md's "Incremental snapshots measured" quotes the saved run
(docs/bench/kafka-incremental.json): every figure of its table and text is the run's."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "kafka-streams.md").read_text(encoding="utf-8")
RUN = json.loads((REPO / "docs" / "bench" / "kafka-incremental.json").read_text())
FIGURES = RUN["kafka_incremental"]


def _section() -> str:
    start = DOC.index("## Incremental snapshots measured")
    return DOC[start : DOC.index("\n## ", start + 1)]


def test_the_table_is_the_saved_run():
    rows = dict(re.findall(r"^\| (.+?) \| ([0-9.]+) \|", _section(), re.MULTILINE))
    assert list(rows.values()) == [
        f"{FIGURES[key]:.3f}"
        for key in (
            "upload_vs_new_bytes",
            "upload_all_vs_new_bytes",
            "storage_retained_vs_one_full",
            "pass_cpu_vs_full_copy",
        )
    ]


def test_the_text_quotes_the_saved_run():
    text = " ".join(_section().split())
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    assert f"{FIGURES['keys']:,} keys" in text
    assert f"{FIGURES['passes']} passes, each after {FIGURES['updates_per_pass']:,} keys" in text
    assert f"The passes uploaded {mb(FIGURES['uploaded_bytes'])}" in text
    whole = FIGURES["one_full_bytes"] * FIGURES["passes"]
    assert f"would have uploaded about {whole / 1e6:.0f} MB" in text
    small = (FIGURES["uploaded_bytes"] - FIGURES["uploaded_sst_bytes"]) / (FIGURES["passes"] * 8)
    assert f"about {small / 1e3:.0f} KB a partition snapshot" in text
    assert f"({mb(FIGURES['one_full_bytes'])} a pass)" in text
    assert f"{mb(FIGURES['new_sst_bytes'])} of that were the new SSTs" in text
    assert f"The rest, {mb(FIGURES['uploaded_bytes'] - FIGURES['uploaded_sst_bytes'])}" in text
    assert FIGURES["uploaded_sst_bytes"] == FIGURES["new_sst_bytes"]  # "every one, none held"
    assert f"hold {FIGURES['storage_retained_vs_one_full']:.2f} times the store" in text
    median = statistics.median(FIGURES["pass_cpu_s"])
    assert f"A pass cost {median:.2f} CPU seconds (median;" in text
    assert f"the baseline {FIGURES['full_copy_cpu_s']:.2f}." in text
    idle = FIGURES["idle_pass_cpu_s"]
    assert (
        f"A pass with nothing new cost {idle['resident_seeder']:.2f} CPU seconds with the "
        f"resident seeder and {idle['own_seeder_process']:.2f} with a seeder process of its own"
    ) in text
    walls = statistics.median(FIGURES["pass_wall_s"])
    assert f"from {FIGURES['full_copy_wall_s']:.2f} to {walls:.2f} a pass (median)" in text


def test_the_format_doc_quotes_the_saved_idle_passes():
    # docs/kafka-streams-format.md's `serve` paragraph quotes the same run
    doc = " ".join((REPO / "docs" / "kafka-streams-format.md").read_text().split())
    idle = FIGURES["idle_pass_cpu_s"]
    assert (
        f"{idle['resident_seeder']:.2f} CPU seconds for a pass of 8 partitions with nothing new, "
        f"where one with a seeder process of its own costs {idle['own_seeder_process']:.2f}"
    ) in doc


def test_the_readme_quotes_the_saved_pass_cpu():
    readme = " ".join((REPO / "README.md").read_text().split())
    assert (
        f"a pass costs {FIGURES['pass_cpu_vs_full_copy']:.2f} of the CPU a pass cost before"
    ) in readme
