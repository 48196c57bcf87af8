"""A GC dry run's plan: one strip per lineage, its snapshots on its own LSN axis, kept (top
row) or deleted (bottom row), shaped by their first reason, every reason on hover."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from snapledger.cli.pictures.canvas import Mark, Picture, canvas, utc

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

KEEP, DELETE, TRIM = "#2e7d32", "#c62828", "#6a1b9a"
#: A decision's first reason, as the marker its snapshot is drawn with (matplotlib's).
SHAPES = {
    "latest": "*",
    "newest": "o",
    "too_young": "^",
    "pinned": "D",
    "held": "s",
    "generation": "p",
    "within_caps": "h",
    "in_grace": "8",
    "named_by_latest_json": "P",
    "named_by_generation_json": "H",
    "broken_not_counted": "x",  # never first: listed after the reasons that keep it
    "unprotected": "X",
    "beyond_max_count": "<",
    "older_than_max_age": ">",
    "rejected": "v",
    "expiring": "d",
}
UNKNOWN = "."
STRIP_HEIGHT = 1.15
AXIS_WIDTH_POINTS = 6.5 * 72  # a strip's axis, about: the figure less its labels and legend


def gc_plan(report: Mapping[str, Any]) -> Picture:
    """Per lineage, each snapshot kept or deleted, by LSN, with its reasons."""
    lineages = list(report.get("lineages", []))
    height = 1.1 + STRIP_HEIGHT * max(1, len(lineages))
    picture = canvas("GC plan", width=10, height=height)
    axes = picture.figure.subplots(max(1, len(lineages)), 1, squeeze=False)[:, 0]
    reasons: set[str] = set()
    for ax, lineage in zip(axes, lineages, strict=False):
        reasons |= _strip(picture, ax, lineage)
    if not lineages:
        axes[0].set_axis_off()
        axes[0].text(0.5, 0.5, "no lineage in the plan", ha="center", va="center")
    else:
        axes[-1].set_xlabel("LSN")
    picture.figure.suptitle("GC plan: what is kept (and why) and what is deleted", fontsize=11)
    picture.figure.legend(
        handles=_legend(reasons), loc="outside right upper", frameon=False, title="decisions"
    )
    return picture


def _strip(picture: Picture, ax: Axes, lineage: Mapping[str, Any]) -> set[str]:
    """One lineage's decisions; the reasons it gives."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    name = f"{lineage.get('stream')}/{lineage.get('partition')}"
    decided = [(s, True, list(s.get("reasons") or [])) for s in lineage.get("kept") or []]
    decided += [(s, False, list(s.get("causes") or [])) for s in lineage.get("deleted") or []]
    for snapshot, kept, why in sorted(decided, key=lambda d: int(d[0].get("lsn", 0))):
        _decision(picture, ax, snapshot, kept, why)
    trim = lineage.get("trim_lsn")
    if trim is not None:
        line = ax.axvline(int(trim), color=TRIM, linestyle="--", linewidth=1.2, zorder=1)
        hover = f"{name}: trim point LSN {int(trim):,}"
        picture.mark(line, "trim", Mark(("trim",), {"lsn": str(int(trim))}, hover))
    counts = f"{len(lineage.get('kept') or [])} kept, {len(lineage.get('deleted') or [])} deleted"
    title = ax.set_title(f"{name}: {counts}", loc="left", fontsize=9, fontweight="bold")
    picture.mark(title, "lineage", Mark(("lineage",), {"lineage": name}, f"{name}: {counts}"))
    ax.set_yticks([0, 1], ["delete", "keep"])
    ax.set_ylim(-0.7, 1.7)
    widest = max((len(f"{int(s.get('lsn', 0)):,}") for s, _, _ in decided), default=1)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=_bins(widest), integer=True))
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.grid(True, axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.margins(x=0.04)
    return {why[0] if why else "" for _, _, why in decided}


def _bins(characters: int) -> int:
    """How many LSN ticks fit across a strip with room to spare, for labels this long."""
    return max(3, min(8, int(AXIS_WIDTH_POINTS / (characters * 6.5 + 24))))


def _decision(
    picture: Picture, ax: Axes, snapshot: Mapping[str, Any], kept: bool, why: Sequence[str]
) -> None:
    lsn, verdict = int(snapshot.get("lsn", 0)), "keep" if kept else "delete"
    shape = SHAPES.get(why[0], UNKNOWN) if why else UNKNOWN
    [dot] = ax.plot(
        [lsn], [1 if kept else 0], linestyle="none", marker=shape,
        markersize=12 if shape == "*" else 9, color=KEEP if kept else DELETE,
        markeredgecolor="#ffffff", markeredgewidth=0.6, zorder=3,
    )  # fmt: skip
    sid = str(snapshot.get("snapshot_id", ""))
    hover = [f"{verdict} snapshot {sid}", f"LSN {lsn:,}: {snapshot.get('status', '?')}"]
    if snapshot.get("registered_at"):
        hover.append(f"registered {utc(snapshot['registered_at'])}")
    hover.append(f"{'reasons' if kept else 'causes'}: {', '.join(why) or 'none given'}")
    data = {"snapshot-id": sid, "lsn": str(lsn), "reasons": ", ".join(why)}
    picture.mark(dot, f"plan-{verdict}", Mark((f"plan-{verdict}",), data, "\n".join(hover)))


def _legend(reasons: set[str]) -> list[Artist]:
    """Keep and delete; then the shape of each first reason this plan gives; the trim line."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def shape(reason: str) -> Line2D:
        marker = SHAPES.get(reason, UNKNOWN)
        label = f"first reason: {reason.replace('_', ' ') or 'none'}"
        return Line2D([], [], linestyle="none", marker=marker, markersize=9, color="#616161",
                      label=label)  # fmt: skip

    present = [r for r in SHAPES if r in reasons] + sorted(r for r in reasons if r not in SHAPES)
    return [
        Patch(color=KEEP, label="keep"),
        Patch(color=DELETE, label="delete"),
        *(shape(reason) for reason in present),
        Line2D([], [], color=TRIM, linestyle="--", linewidth=1.2, label="trim point"),
    ]
