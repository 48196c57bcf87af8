"""The Kafka Streams bench's judged boot figure (bench/kafka_boot_growth.py): how boot grows
with the store, from the per-size figures a run produces."""

from __future__ import annotations

import pytest

from bench.kafka_boot_growth import growth_figures, growth_ratio


def _run(**sizes: tuple[float, float, int, int]) -> dict[str, object]:
    """Per-size figures as the bench names them: (boot from snapshots s, boot by replay s,
    records restored at boot, records written after the snapshots)."""
    figures: dict[str, object] = {}
    for size, (snapshot, replay, restored, after) in sizes.items():
        key = f"keys_{size.removeprefix('k')}"
        figures |= {
            f"{key}.boot_snapshot_s": snapshot,
            f"{key}.boot_replay_s": replay,
            f"{key}.restored_at_boot": restored,
            f"{key}.written_after_snapshot": after,
        }
    return figures


def test_the_judged_ratio_is_the_snapshot_boots_growth_over_the_replays_between_1m_and_5m():
    # Given boots at 1M, 5M and 20M keys
    figures = _run(
        k1000000=(2.2, 2.8, 10_000, 10_000),
        k5000000=(2.4, 6.8, 50_000, 50_000),
        k20000000=(2.6, 22.8, 200_000, 200_000),
    )

    # When the growth figures are derived
    derived = growth_figures(figures, [5_000_000, 1_000_000, 20_000_000])

    # Then the judged one is (2.4 - 2.2) / (6.8 - 2.8), and one per larger size from the
    # smallest, with the tail bound held at every size
    assert derived == {
        "boot_growth_1000000_5000000": 0.05,
        "boot_growth_1000000_20000000": 0.02,
        "boot_growth_ratio": 0.05,
        "tail_bound_held": True,
    }


def test_without_both_judged_sizes_there_is_no_judged_ratio():
    figures = _run(k100000=(2.0, 2.1, 1_000, 1_000), k1000000=(2.1, 3.1, 10_000, 10_000))
    derived = growth_figures(figures, [100_000, 1_000_000])
    assert derived == {"boot_growth_100000_1000000": 0.1, "tail_bound_held": True}


def test_a_replay_that_did_not_grow_gives_no_ratio():
    # the sizes too close to tell: the larger replay no longer than the smaller
    figures = _run(k1000000=(2.2, 3.0, 10, 10), k5000000=(2.3, 2.9, 50, 50))
    assert growth_ratio(figures, 1_000_000, 5_000_000) is None


def test_the_tail_bound_fails_when_any_size_restored_more_than_the_tail():
    figures = _run(k1000000=(2.2, 2.8, 10_000, 10_000), k5000000=(2.4, 6.8, 50_001, 50_000))
    assert growth_figures(figures, [1_000_000, 5_000_000])["tail_bound_held"] is False


def test_a_figure_that_is_not_a_number_is_refused_naming_it():
    figures = _run(k1000000=(2.2, 2.8, 10, 10), k5000000=(2.4, 6.8, 50, 50))
    figures["keys_5000000.boot_replay_s"] = "n/a"
    with pytest.raises(TypeError, match=r"keys_5000000\.boot_replay_s is 'n/a', not a number"):
        growth_ratio(figures, 1_000_000, 5_000_000)


def test_the_bench_runs_1m_5m_and_20m_keys_by_default(monkeypatch: pytest.MonkeyPatch):
    # docs/kafka-streams.md, "What was measured": the sizes run without KAFKA_BENCH_KEYS
    import importlib

    import bench.bench_kafka_streams as module

    monkeypatch.delenv("KAFKA_BENCH_KEYS", raising=False)
    assert importlib.reload(module).KEYS == (1_000_000, 5_000_000, 20_000_000)
