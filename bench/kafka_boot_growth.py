"""The Kafka Streams bench's judged boot figure (issue 43), from its per-size figures: how a
boot grows with the store. An instance's fixed start (the JVM, the clients, the group's join)
is in both boots alike; what a snapshot should save is the replay's growth with the store.

``boot_growth_{a}_{b}`` = (boot from the snapshots at b keys - at a) / (boot by replaying the
changelog at b - at a), for a = the smallest size run and each larger b; ``boot_growth_ratio``
is the one judged, between ``JUDGED_SIZES`` (target <= ``TARGET``, moonshot ``MOONSHOT``),
when both sizes ran. None when the replay did not grow (b's replay no longer than a's: the
sizes are too close to tell). ``tail_bound_held``: at every size, the instance booted from the
snapshots restored at most the changelog records written after them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

JUDGED_SIZES = (1_000_000, 5_000_000)
TARGET, MOONSHOT = 0.1, 0.05


def growth_ratio(figures: Mapping[str, object], small: int, large: int) -> float | None:
    """(boot_snapshot_s at ``large`` - at ``small``) / (boot_replay_s at ``large`` - at
    ``small``), 4 decimals; None when the replay did not grow."""
    snapshot = _figure(figures, large, "boot_snapshot_s") - _figure(
        figures, small, "boot_snapshot_s"
    )
    replay = _figure(figures, large, "boot_replay_s") - _figure(figures, small, "boot_replay_s")
    return round(snapshot / replay, 4) if replay > 0 else None


def growth_figures(figures: Mapping[str, object], sizes: Sequence[int]) -> dict[str, object]:
    """The growth ratios and the tail bound over the sizes run (``keys_{size}.*`` figures)."""
    ordered = sorted(sizes)
    derived: dict[str, object] = {
        f"boot_growth_{ordered[0]}_{large}": growth_ratio(figures, ordered[0], large)
        for large in ordered[1:]
    }
    small, large = JUDGED_SIZES
    if small in ordered and large in ordered:
        derived["boot_growth_ratio"] = growth_ratio(figures, small, large)
    derived["tail_bound_held"] = all(
        _figure(figures, size, "restored_at_boot")
        <= _figure(figures, size, "written_after_snapshot")
        for size in ordered
    )
    return derived


def _figure(figures: Mapping[str, object], size: int, name: str) -> float:
    value = figures[f"keys_{size}.{name}"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"keys_{size}.{name} is {value!r}, not a number")
    return float(value)
