"""docs/kafka-streams.md's "What was measured" quotes the saved bench run
(docs/bench/kafka-streams.json, ``make bench BENCH_ARGS="--only kafka_streams"``): every figure
in its table and its throughput line is the saved one, formatted as the doc shows it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.kafka_boot_growth import JUDGED_SIZES, MOONSHOT, TARGET, growth_figures

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "kafka-streams.md").read_text(encoding="utf-8")
RUN = json.loads((REPO / "docs" / "bench" / "kafka-streams.json").read_text(encoding="utf-8"))
FIGURES = RUN["kafka_streams"]
#: Each table row's figure in the saved run, and how the doc formats it.
ROWS = {
    "boot from the snapshots (seed + start to RUNNING), s": ("boot_snapshot_s", "{:.1f}"),
    "of which the seed (download, place), s": ("boot_snapshot_seed_s", "{:.1f}"),
    "of which start to RUNNING, s": ("boot_snapshot_start_s", "{:.1f}"),
    "boot by replaying the changelog, s": ("boot_replay_s", "{:.1f}"),
    "ratio: boot from the snapshots ÷ by replay": ("boot_ratio", "{:.3f}"),
    "records restored at boot": ("restored_at_boot", "{:,}"),
    "records written after the snapshots": ("written_after_snapshot", "{:,}"),
    "records the replay restored": ("replay_restored", "{:,}"),
    "snapshot of all 8 partitions (one seeder process), s": (
        "snapshot_all_partitions_s",
        "{:.1f}",
    ),
    "snapshots' size, MB": ("snapshot_bytes", "mb"),
}


def _cell(value: object, fmt: str) -> str:
    if fmt == "mb":
        return f"{value / 1e6:.0f}"  # type: ignore[operator]
    return fmt.format(value)


def _section() -> str:
    start = DOC.index("## What was measured")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end > 0 else len(DOC)]


def test_the_boot_table_is_the_saved_run():
    # Given the saved run's sizes, When the doc's table is read
    sizes = sorted(
        {int(k.split(".")[0].removeprefix("keys_")) for k in FIGURES if k.startswith("keys_")}
    )
    rows = re.findall(r"^\| (.+?) \| (.+) \|$", _section(), re.MULTILINE)
    table = {label: cells.split(" | ") for label, cells in rows}
    header = table.pop(next(label for label in table if label.startswith("figure")))
    # Then it has a column per size and a row per figure, each cell the run's
    assert header == [f"{size:,} keys" for size in sizes]
    assert set(table) == set(ROWS)
    for label, (key, fmt) in ROWS.items():
        assert table[label] == [_cell(FIGURES[f"keys_{s}.{key}"], fmt) for s in sizes], label


def _intervals() -> list[int]:
    return sorted(
        {
            int(k.split(".")[0].removeprefix("every_").removesuffix("s"))
            for k in FIGURES
            if k.startswith("every_")
        }
    )


def test_the_throughput_and_fixed_costs_quoted_are_the_saved_run():
    section = " ".join(_section().split())
    assert f"{FIGURES['throughput_records']:,} orders" in section
    assert f"`nice -n {FIGURES['throughput_sidecar_nice']}`" in section
    assert _intervals(), "the saved run has throughput trials"
    for interval in _intervals():
        # each interval's line: its trials' snapshots and ratios
        run = {
            k.split(".", 1)[1]: v for k, v in FIGURES.items() if k.startswith(f"every_{interval}s.")
        }
        ratios = ", ".join(f"{r:.2f}" for r in run["ratios"])
        made = run["snapshots_made"]
        span = f"{min(made)}" if min(made) == max(made) else f"{min(made)}-{max(made)}"
        assert (
            f"every {interval} s: {span} partition snapshots registered per "
            f"trial; median {run['ratio_median']:.2f} (min {run['ratio_min']:.2f}, max "
            f"{run['ratio_max']:.2f}; pairs {ratios})" in section
        ), interval
    assert (
        f"instance with nothing to restore reached RUNNING in {FIGURES['empty_boot_s']:.1f} s"
        in section
    )
    boots = ", ".join(f"{b:.1f}" for b in FIGURES["empty_boots_s"])
    assert f"(median of {boots} s" in section


def test_the_boot_figures_in_the_text_are_the_saved_run():
    section = " ".join(_section().split())
    sizes = sorted({k.split(".")[0] for k in FIGURES if k.startswith("keys_")})
    seeds = [FIGURES[f"{s}.boot_snapshot_seed_s"] for s in sizes]
    assert f"took {min(seeds):.1f}-{max(seeds):.1f} s" in section
    largest = sizes[-1]
    restored, seconds = FIGURES[f"{largest}.replay_restored"], FIGURES[f"{largest}.boot_replay_s"]
    assert f"about {round(restored / seconds, -4):,.0f} records/s here" in section
    assert f"({restored:,} in {seconds:.1f} s)" in section
    ratios = ", ".join(
        f"{FIGURES[f'{s}.boot_ratio']:.2f} at {int(s.removeprefix('keys_')) // 1_000_000}M"
        for s in sizes
    )
    assert f"({ratios})" in section
    # B's start to RUNNING alone over C's boot: the ratio even a seed of no time would give
    floors = ", ".join(
        f"{FIGURES[f'{s}.boot_snapshot_start_s'] / FIGURES[f'{s}.boot_replay_s']:.2f} at "
        f"{int(s.removeprefix('keys_')) // 1_000_000}M"
        for s in sizes
    )
    assert f"({floors})" in section
    load = re.search(r"load average (\d+-\d+)", RUN["_run"]["machine"])
    assert load is not None and f"(load average {load[1]})" in section


def test_the_saved_run_kept_the_tail_bound():
    # records restored at boot <= records written after the snapshots, at every size
    for key, restored in FIGURES.items():
        if key.endswith(".restored_at_boot"):
            size = key.split(".")[0]
            assert restored <= FIGURES[f"{size}.written_after_snapshot"], size


def test_the_judged_growth_figure_quoted_is_the_saved_runs():
    # Given the saved run's boot figures at the judged sizes
    small, large = (f"keys_{size}" for size in JUDGED_SIZES)
    derived = growth_figures(FIGURES, JUDGED_SIZES)
    section = " ".join(_section().split())
    # Then the doc quotes the growth ratio the bench computes from them, its terms and verdict
    terms = (
        f"({FIGURES[f'{large}.boot_snapshot_s']:.2f} - {FIGURES[f'{small}.boot_snapshot_s']:.2f})"
        f" / ({FIGURES[f'{large}.boot_replay_s']:.2f} - {FIGURES[f'{small}.boot_replay_s']:.2f})"
    )
    ratio = derived["boot_growth_ratio"]
    assert isinstance(ratio, float)
    assert f"{terms} = **{ratio:.3f}** in the saved run" in section
    assert ratio <= TARGET and ratio > MOONSHOT  # "the target is met, the moonshot is not"
    assert derived["tail_bound_held"] is True
