"""A GC dry run's plan: one strip per lineage, its snapshots on its own LSN axis, kept (top
row) or deleted (bottom row), drawn with the marker their first reason or cause declares
(``models/retention_reasons.py``), every reason on hover."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from snapledger.cli.pictures.canvas import Mark, Picture, canvas, utc
from snapledger.errors import InvalidRequestError
from snapledger.models.retention_reasons import Decision, DeleteCause, KeepReason

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

KEEP, DELETE, TRIM = "#2e7d32", "#c62828", "#6a1b9a"
V = TypeVar("V", KeepReason, DeleteCause)
STRIP_HEIGHT = 1.15
AXIS_WIDTH_POINTS = 6.5 * 72  # a strip's axis, about: the figure less its labels and legend


def gc_plan(report: Mapping[str, Any]) -> Picture:
    """Per lineage, each snapshot kept or deleted, by LSN, with its reasons."""
    lineages = list(report.get("lineages", []))
    height = 1.1 + STRIP_HEIGHT * max(1, len(lineages))
    picture = canvas("GC plan", width=10, height=height)
    axes = picture.figure.subplots(max(1, len(lineages)), 1, squeeze=False)[:, 0]
    reasons: set[Decision] = set()
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


def _strip(picture: Picture, ax: Axes, lineage: Mapping[str, Any]) -> set[Decision]:
    """One lineage's decisions; the first reason or cause of each."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    name = f"{lineage.get('stream')}/{lineage.get('partition')}"
    decided: list[tuple[Any, bool, Sequence[Decision]]] = [
        (s, True, declared(KeepReason, s.get("reasons"))) for s in lineage.get("kept") or []
    ]
    decided += [
        (s, False, declared(DeleteCause, s.get("causes"))) for s in lineage.get("deleted") or []
    ]
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
    return {why[0] for _, _, why in decided}


def declared(vocabulary: type[V], given: Any) -> list[V]:
    """A decision's reasons (or causes) as declared; one it does not declare, or none at all,
    is refused: the plan came from another release of snapledger, or is damaged."""
    what = "reason" if vocabulary is KeepReason else "cause"
    members = {member.value: member for member in vocabulary}
    values = [str(value) for value in given or []]
    if not values:
        raise InvalidRequestError(f"a snapshot in the plan has no {what}: the plan is damaged")
    unknown = sorted(set(values) - members.keys())
    if unknown:
        raise InvalidRequestError(
            f"the plan gives the {what} {', '.join(map(repr, unknown))}, which this snapledger "
            f"does not declare (it knows {', '.join(members)}): the functions run a newer "
            "release; upgrade this client to it"
        )
    return [members[value] for value in values]


def _bins(characters: int) -> int:
    """How many LSN ticks fit across a strip with room to spare, for labels this long."""
    return max(3, min(8, int(AXIS_WIDTH_POINTS / (characters * 6.5 + 24))))


def _decision(
    picture: Picture, ax: Axes, snapshot: Mapping[str, Any], kept: bool, why: Sequence[Decision]
) -> None:
    lsn, verdict = int(snapshot.get("lsn", 0)), "keep" if kept else "delete"
    shape = why[0].marker
    [dot] = ax.plot(
        [lsn], [1 if kept else 0], linestyle="none", marker=shape,
        markersize=12 if shape == "*" else 9, color=KEEP if kept else DELETE,
        markeredgecolor="#ffffff", markeredgewidth=0.6, zorder=3,
    )  # fmt: skip
    sid = str(snapshot.get("snapshot_id", ""))
    hover = [f"{verdict} snapshot {sid}", f"LSN {lsn:,}: {snapshot.get('status', '?')}"]
    if snapshot.get("registered_at"):
        hover.append(f"registered {utc(snapshot['registered_at'])}")
    said = ", ".join(f"{w.value} ({w.text})" for w in why)
    hover.append(f"{'reasons' if kept else 'causes'}: {said}")
    data = {"snapshot-id": sid, "lsn": str(lsn), "reasons": ", ".join(w.value for w in why)}
    picture.mark(dot, f"plan-{verdict}", Mark((f"plan-{verdict}",), data, "\n".join(hover)))


def _legend(reasons: set[Decision]) -> list[Artist]:
    """Keep and delete; then the marker of each first reason or cause this plan gives, in
    their declared order; the trim line."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def shape(reason: Decision) -> Line2D:
        first = "first reason" if isinstance(reason, KeepReason) else "first cause"
        label = f"{first}: {reason.value.replace('_', ' ')}"
        return Line2D([], [], linestyle="none", marker=reason.marker, markersize=9,
                      color="#616161", label=label)  # fmt: skip

    present = [r for r in (*KeepReason, *DeleteCause) if r in reasons]
    return [
        Patch(color=KEEP, label="keep"),
        Patch(color=DELETE, label="delete"),
        *(shape(reason) for reason in present),
        Line2D([], [], color=TRIM, linestyle="--", linewidth=1.2, label="trim point"),
    ]
