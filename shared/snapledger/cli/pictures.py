"""Pictures of a lineage, drawn as SVG (or an HTML page holding it) from query answers.

- ``timeline``: the lineage's snapshots on an LSN axis (left to right) over registry time
  (top to bottom), coloured by status, with the latest, holds and pins marked, the trim
  point as a line and each job as a span from its base LSN to its target;
- ``gc_plan``: a GC dry run's plan, one row per lineage, each snapshot kept or deleted
  with its reasons.

Pure and standard library only: the inputs are the JSON answers of the query and gc
functions (``list``, ``latest``, ``jobs``, a dry run's ``report``), so the CLI, the demo
and anyone holding those answers draw the same picture. Every drawn element carries a
``class`` and ``data-`` attributes naming what it is, so tests (and tools) can read the
picture back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

STATUS_COLOURS = {
    "REGISTERED": "#2e7d32",
    "EXPIRING": "#ef6c00",
    "DELETED": "#9e9e9e",
    "REJECTED": "#c62828",
}
JOB_COLOURS = {"SUCCESS": "#1565c0", "FAILED": "#c62828"}
KEEP, DELETE = "#2e7d32", "#c62828"
WIDTH, MARGIN, ROW = 900, 60, 28
FORMATS = (".svg", ".html")


@dataclass(frozen=True)
class _Axis:
    low: float
    high: float
    start: float
    length: float

    def at(self, value: float) -> float:
        span = self.high - self.low or 1
        return self.start + (value - self.low) / span * self.length


def timeline(
    stream: str,
    partition: int,
    snapshots: Sequence[Mapping[str, Any]],
    head: Mapping[str, Any],
    jobs: Iterable[Mapping[str, Any]] = (),
) -> str:
    """The lineage as an SVG document."""
    lineage_jobs = [j for j in jobs if _job_plan(j, stream, partition) is not None]
    times = [_time(s["registered_at"]) for s in snapshots]
    times += [_time(j["requested_at"]) for j in lineage_jobs]
    lsns = [int(s["lsn"]) for s in snapshots]
    for job in lineage_jobs:
        plan = _job_plan(job, stream, partition)
        assert plan is not None
        lsns += [int(plan.get("base_lsn") or 0), int(plan["target_lsn"])]
    if head.get("trim_lsn") is not None:
        lsns.append(int(head["trim_lsn"]))
    height = MARGIN * 2 + ROW * max(4, len(snapshots) + len(lineage_jobs))
    x = _Axis(min(lsns, default=0), max(lsns, default=1), MARGIN, WIDTH - 2 * MARGIN)
    y = _Axis(min(times, default=0), max(times, default=1), MARGIN, height - 2 * MARGIN)
    parts = [_title(f"{stream}/{partition}: snapshots by LSN over registry time")]
    parts += _axes(x, height, "LSN")
    if head.get("trim_lsn") is not None:
        trim = x.at(int(head["trim_lsn"]))
        parts.append(
            f'<line class="trim" data-lsn="{int(head["trim_lsn"])}" x1="{trim:.1f}" '
            f'y1="{MARGIN - 10}" x2="{trim:.1f}" y2="{height - MARGIN}" stroke="#6a1b9a" '
            'stroke-dasharray="6 4"/>'
            f'<text x="{trim + 4:.1f}" y="{MARGIN - 14}" font-size="11" fill="#6a1b9a">'
            f"trim {int(head['trim_lsn'])}</text>"
        )
    for job in lineage_jobs:
        parts.append(_job_span(job, _job_plan(job, stream, partition) or {}, x, y))
    latest = head.get("latest_snapshot_id")
    for snapshot in snapshots:
        parts.append(_snapshot_mark(snapshot, latest, x, y))
    parts.append(_legend(height))
    return _svg(parts, height)


def gc_plan(report: Mapping[str, Any]) -> str:
    """A GC dry run's plan as an SVG document: per lineage, each snapshot kept or deleted."""
    lineages = list(report.get("lineages", []))
    rows = sum(1 + len(lin.get("kept", [])) + len(lin.get("deleted", [])) for lin in lineages)
    height = MARGIN * 2 + ROW * max(2, rows)
    parts = [_title("GC plan: what is kept (and why) and what is deleted")]
    row = 0
    for lineage in lineages:
        name = f"{lineage.get('stream')}/{lineage.get('partition')}"
        top = MARGIN + row * ROW
        parts.append(
            f'<text class="lineage" data-lineage={quoteattr(name)} x="{MARGIN}" '
            f'y="{top + 18}" font-size="13" font-weight="bold">{escape(name)}</text>'
        )
        row += 1
        decided = [(s, True, s.get("reasons", [])) for s in lineage.get("kept", [])]
        decided += [(s, False, s.get("causes", [])) for s in lineage.get("deleted", [])]
        for snapshot, kept, why in sorted(decided, key=lambda d: -int(d[0].get("lsn", 0))):
            parts.append(_plan_row(snapshot, kept, why, MARGIN + row * ROW))
            row += 1
    return _svg(parts, height)


def write(picture: str, path: str | Path, title: str) -> Path:
    """Write ``picture`` (an SVG document) to ``path``: ``.svg`` as is, ``.html`` as a page."""
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise ValueError(
            f"{target.name}: a picture is written as {' or '.join(FORMATS)}; name the file so"
        )
    if target.suffix.lower() == ".html":
        picture = (
            f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"</head><body>\n{picture}\n</body></html>\n"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(picture)
    return target


# --- pieces ------------------------------------------------------------------------------


def _snapshot_mark(snapshot: Mapping[str, Any], latest: str | None, x: _Axis, y: _Axis) -> str:
    sid = str(snapshot["snapshot_id"])
    status = str(snapshot["status"])
    cx, cy = x.at(int(snapshot["lsn"])), y.at(_time(snapshot["registered_at"]))
    marks = []
    if sid == latest:
        marks.append("latest")
    if snapshot.get("holds"):
        marks.append("held")
    if snapshot.get("pins"):
        marks.append("pinned")
    if snapshot.get("member_of") is not None:
        marks.append(f"generation {snapshot['member_of']}")
    classes = " ".join(["snapshot", f"status-{status}", *(m.split()[0] for m in marks)])
    radius = 8 if sid == latest else 5
    ring = (
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius + 4}" fill="none" stroke="#000"/>'
        if sid == latest
        else ""
    )
    label = f" ({', '.join(marks)})" if marks else ""
    return (
        f"<g class={quoteattr(classes)} data-snapshot-id={quoteattr(sid)} "
        f'data-lsn="{int(snapshot["lsn"])}" data-status="{escape(status)}">'
        f"{ring}"
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius}" '
        f'fill="{STATUS_COLOURS.get(status, "#000")}"/>'
        f'<text x="{cx + 12:.1f}" y="{cy + 4:.1f}" font-size="11">'
        f"{escape(status)} {int(snapshot['lsn'])}{escape(label)}</text></g>"
    )


def _job_span(job: Mapping[str, Any], plan: Mapping[str, Any], x: _Axis, y: _Axis) -> str:
    state = str(job.get("state", ""))
    start = int(plan.get("base_lsn") or 0)
    end = int(plan["target_lsn"])
    top = y.at(_time(job["requested_at"]))
    colour = JOB_COLOURS.get(state, "#757575")
    return (
        f'<g class="job" data-job-id={quoteattr(str(job.get("job_id")))} '
        f'data-state="{escape(state)}" data-kind="{escape(str(job.get("job_kind")))}">'
        f'<rect x="{x.at(start):.1f}" y="{top - 4:.1f}" '
        f'width="{max(2.0, x.at(end) - x.at(start)):.1f}" height="8" fill="{colour}" '
        'opacity="0.5"/>'
        f'<text x="{x.at(start):.1f}" y="{top - 8:.1f}" font-size="10">'
        f"{escape(str(job.get('job_kind')))} {start}..{end} {escape(state)}</text></g>"
    )


def _plan_row(snapshot: Mapping[str, Any], kept: bool, why: Sequence[str], top: float) -> str:
    verdict = "keep" if kept else "delete"
    reasons = ", ".join(why)
    return (
        f'<g class="plan-{verdict}" data-snapshot-id={quoteattr(str(snapshot.get("snapshot_id")))}'
        f' data-lsn="{int(snapshot.get("lsn", 0))}" data-reasons={quoteattr(reasons)}>'
        f'<rect x="{MARGIN + 20}" y="{top + 4}" width="70" height="{ROW - 8}" rx="4" '
        f'fill="{KEEP if kept else DELETE}"/>'
        f'<text x="{MARGIN + 30}" y="{top + 19}" font-size="12" fill="#fff">{verdict}</text>'
        f'<text x="{MARGIN + 100}" y="{top + 19}" font-size="12">LSN {int(snapshot.get("lsn", 0))}'
        f" {escape(str(snapshot.get('snapshot_id', '')))}: {escape(reasons)}</text></g>"
    )


def _axes(x: _Axis, height: int, label: str) -> list[str]:
    bottom = height - MARGIN + 20
    return [
        f'<line x1="{MARGIN}" y1="{bottom}" x2="{WIDTH - MARGIN}" y2="{bottom}" stroke="#000"/>',
        f'<text class="axis" x="{MARGIN}" y="{bottom + 16}" font-size="11">{label} '
        f"{x.low:.0f}</text>",
        f'<text x="{WIDTH - MARGIN}" y="{bottom + 16}" font-size="11" text-anchor="end">'
        f"{x.high:.0f}</text>",
        f'<text x="10" y="{MARGIN}" font-size="11">registry time ↓</text>',
    ]


def _legend(height: int) -> str:
    entries = [*STATUS_COLOURS.items(), ("job", "#1565c0")]
    items = "".join(
        f'<circle cx="{MARGIN + i * 130}" cy="{height - 12}" r="5" fill="{colour}"/>'
        f'<text x="{MARGIN + i * 130 + 9}" y="{height - 8}" font-size="11">{name}</text>'
        for i, (name, colour) in enumerate(entries)
    )
    return f'<g class="legend">{items}</g>'


def _title(text: str) -> str:
    return f'<text class="title" x="{MARGIN}" y="24" font-size="15">{escape(text)}</text>'


def _svg(parts: list[str], height: int) -> str:
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height + 20}" '
        f'viewBox="0 0 {WIDTH} {height + 20}" font-family="sans-serif">\n'
        f'<rect width="100%" height="100%" fill="#fff"/>\n{body}\n</svg>\n'
    )


def _job_plan(job: Mapping[str, Any], stream: str, partition: int) -> Mapping[str, Any] | None:
    if job.get("stream") != stream:
        return None
    for plan in job.get("partitions", []):
        if plan.get("partition") == partition:
            return dict(plan)
    return None


def _time(value: str | datetime) -> float:
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return when.timestamp()
