"""The timeline of one lineage: its snapshots by registry time (x) and LSN (y)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from snapledger.cli.pictures.canvas import Mark, Picture, canvas, days, size, utc

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

STATUS_COLOURS = {
    "REGISTERED": "#2e7d32",
    "EXPIRING": "#ef6c00",
    "DELETED": "#9e9e9e",
    "REJECTED": "#c62828",
}
#: Job spans by state; every state not named here is still in flight.
JOB_COLOURS = {"SUCCESS": "#1565c0", "FAILED": "#c62828", "CANCELLED": "#757575"}
IN_FLIGHT = "#00897b"
TRIM, HOLD, PIN, LATEST = "#6a1b9a", "#8e24aa", "#0277bd", "#000000"
#: The rings around a snapshot's dot: what marks it, its marker, size and colour.
RINGS = {
    "latest": ("o", 17, LATEST),
    "held": ("s", 13, HOLD),
    "pinned": ("D", 12, PIN),
}


def timeline(
    stream: str,
    partition: int,
    snapshots: Sequence[Mapping[str, Any]],
    head: Mapping[str, Any],
    jobs: Iterable[Mapping[str, Any]] = (),
) -> Picture:
    """The lineage's snapshots coloured by status, the latest, holds and pins ringed, the trim
    point as a dashed line and each job as a bar from its base LSN to its target, at the time
    it was requested; every one detailed on hover."""
    name = f"{stream}/{partition}"
    picture = canvas(f"{name}: snapshots", width=10, height=5.5)
    ax = picture.figure.add_subplot()
    times = [days(s["registered_at"]) for s in snapshots]
    lsns = [int(s["lsn"]) for s in snapshots]
    for job in jobs:
        plan = _job_plan(job, stream, partition)
        if plan is not None:
            _job(picture, ax, job, plan)
            times.append(days(job["requested_at"]))
            lsns += [int(plan.get("base_lsn") or 0), int(plan["target_lsn"])]
    latest = head.get("latest_snapshot_id")
    for snapshot in snapshots:
        _snapshot(picture, ax, snapshot, latest)
    if head.get("trim_lsn") is not None:
        trim = int(head["trim_lsn"])
        line = ax.axhline(trim, color=TRIM, linestyle="--", linewidth=1.2, zorder=1)
        hover = f"trim point: LSN {trim:,} (the changelog before it may be deleted)"
        picture.mark(line, "trim", Mark(("trim",), {"lsn": str(trim)}, hover))
        lsns.append(trim)
    _axes(ax, times, lsns, empty=not snapshots)
    picture.figure.suptitle(f"{name}: snapshots by LSN over registry time", fontsize=11)
    picture.figure.legend(
        handles=_legend(), loc="outside right upper", frameon=False, title="marks"
    )
    return picture


def _snapshot(picture: Picture, ax: Axes, snapshot: Mapping[str, Any], latest: Any) -> None:
    sid, status, lsn = str(snapshot["snapshot_id"]), str(snapshot["status"]), int(snapshot["lsn"])
    at = days(snapshot["registered_at"])
    marks = [m for m, on in _marks(snapshot, latest).items() if on]
    hover = _hover(snapshot, marks)
    for ring in marks:
        shape, width, colour = RINGS[ring]
        [drawn] = ax.plot(
            [at], [lsn], linestyle="none", marker=shape, markersize=width, fillstyle="none",
            markeredgecolor=colour, markeredgewidth=1.3, zorder=4,
        )  # fmt: skip
        picture.mark(drawn, "ring", Mark(("ring", ring), {"snapshot-id": sid}, hover))
    [dot] = ax.plot(
        [at], [lsn], linestyle="none", marker="o", markersize=7,
        color=STATUS_COLOURS.get(status, "#000000"), markeredgecolor="#ffffff",
        markeredgewidth=0.6, zorder=5,
    )  # fmt: skip
    classes = ("snapshot", f"status-{status}", *marks)
    data = {"snapshot-id": sid, "lsn": str(lsn), "status": status}
    picture.mark(dot, "snapshot", Mark(classes, data, hover))


def _job(picture: Picture, ax: Axes, job: Mapping[str, Any], plan: Mapping[str, Any]) -> None:
    state, kind = str(job.get("state", "")), str(job.get("job_kind", ""))
    base, target = int(plan.get("base_lsn") or 0), int(plan["target_lsn"])
    at = days(job["requested_at"])
    [bar] = ax.plot(
        [at, at], [base, target], color=JOB_COLOURS.get(state, IN_FLIGHT), linewidth=5,
        alpha=0.55, solid_capstyle="butt", zorder=2,
    )  # fmt: skip
    hover = "\n".join(
        (
            f"{kind} job {job.get('job_id')}: {state}",
            f"LSN {base:,} .. {target:,}",
            f"requested {utc(job['requested_at'])}",
        )
    )
    data = {"job-id": str(job.get("job_id")), "kind": kind, "state": state}
    picture.mark(bar, "job", Mark(("job",), data, hover))


def _marks(snapshot: Mapping[str, Any], latest: Any) -> dict[str, bool]:
    return {
        "latest": snapshot["snapshot_id"] == latest,
        "held": bool(snapshot.get("holds")),
        "pinned": bool(snapshot.get("pins")),
    }


def _hover(snapshot: Mapping[str, Any], marks: Sequence[str] = ()) -> str:
    """Everything a reader asks of a snapshot: id, LSN, status, size, time, and why."""
    lines = [
        f"snapshot {snapshot['snapshot_id']}",
        f"LSN {int(snapshot['lsn']):,}: {snapshot['status']}"
        + (f" ({', '.join(marks)})" if marks else ""),
        f"registered {utc(snapshot['registered_at'])}",
    ]
    if "total_bytes" in snapshot:
        rows = snapshot.get("row_count")
        lines.append(
            f"size {size(int(snapshot['total_bytes']))} in {snapshot.get('file_count', 0)} "
            f"file(s)" + ("" if rows is None else f", {int(rows):,} row(s)")
        )
    if snapshot.get("member_of") is not None:
        lines.append(f"member of stream snapshot generation {snapshot['member_of']}")
    lines += [_hold(h) for h in snapshot.get("holds") or []]
    lines += [f"pinned by job {p.get('job_id')}" for p in snapshot.get("pins") or []]
    for label, cause, reason in (
        ("chosen by GC", "expiry_cause", "expiry_reason"),
        ("rejected", "rejection_code", "rejection_reason"),
    ):
        if snapshot.get(cause) or snapshot.get(reason):
            why = ": ".join(str(snapshot[k]) for k in (cause, reason) if snapshot.get(k))
            lines.append(f"{label}: {why}")
    return "\n".join(lines)


def _hold(hold: Mapping[str, Any]) -> str:
    by = f" by {hold['by']}" if hold.get("by") else ""
    until = f" until {hold['expires_at']}" if hold.get("expires_at") else ""
    return f"held{by}{until}: {hold.get('reason') or 'no reason given'}"


def _axes(ax: Axes, times: Sequence[float], lsns: Sequence[int], *, empty: bool) -> None:
    """Date ticks below, LSN ticks beside, limits around what is drawn (10 minutes and 10
    LSNs at the least, so one snapshot still has readable ticks)."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.set_xlabel("registered (UTC)")
    ax.set_ylabel("LSN")
    if empty:
        ax.text(0.5, 0.5, "no snapshots", ha="center", va="center", transform=ax.transAxes)
    if not times:
        ax.set_xticks([])
        ax.set_yticks([])
        return
    locator = AutoDateLocator(minticks=3, maxticks=8, tz=UTC)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    ax.yaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(_lsn_tick))
    ax.grid(True, color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlim(*_around(times, least=10 / 1440))
    low, high = _around(lsns, least=10)
    if min(lsns) >= 0:  # no room below LSN 0 beyond the marks' own
        low = max(low, min(lsns) - (high - low) * 0.04)
    ax.set_ylim(low, high)


def _lsn_tick(value: float, _position: int | None) -> str:
    """An LSN tick's label: 1,500; none below 0 (a margin, not an LSN)."""
    return f"{value:,.0f}" if value >= 0 else ""


def _around(values: Sequence[float], *, least: float) -> tuple[float, float]:
    """Limits holding ``values`` with a margin, at least ``least`` on each side."""
    pad = max((max(values) - min(values)) * 0.06, least)
    return min(values) - pad, max(values) + pad


def _legend() -> list[Line2D]:
    """One entry for everything the picture can show, whether or not this lineage has it."""
    from matplotlib.lines import Line2D

    def dot(label: str, colour: str) -> Line2D:
        return Line2D([], [], linestyle="none", marker="o", markersize=7, color=colour, label=label)

    def ring(label: str, shape: str, colour: str) -> Line2D:
        return Line2D(
            [], [], linestyle="none", marker=shape, markersize=11, fillstyle="none",
            markeredgecolor=colour, markeredgewidth=1.3, label=label,
        )  # fmt: skip

    def bar(label: str, colour: str, **style: Any) -> Line2D:
        return Line2D([], [], color=colour, label=label, **style)

    return [
        *(dot(status.lower(), colour) for status, colour in STATUS_COLOURS.items()),
        *(ring(label, shape, colour) for label, (shape, _, colour) in RINGS.items()),
        bar("trim point", TRIM, linestyle="--", linewidth=1.2),
        *(bar(f"job {s.lower()}", c, linewidth=5, alpha=0.55) for s, c in JOB_COLOURS.items()),
        bar("job in flight", IN_FLIGHT, linewidth=5, alpha=0.55),
    ]


def _job_plan(job: Mapping[str, Any], stream: str, partition: int) -> Mapping[str, Any] | None:
    if job.get("stream") != stream:
        return None
    for plan in job.get("partitions", []):
        if plan.get("partition") == partition:
            return dict(plan)
    return None
