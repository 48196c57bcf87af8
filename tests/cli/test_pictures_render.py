"""The pictures as a browser shows them: each drawn to HTML, SVG and PNG, loaded in headless
Chromium (Debian's ``chromium``), every label measured there: inside the canvas, none
overlapping another (the legend's included), and every mark carrying its hover details.

Screenshots go to ``$SNAPLEDGER_PICTURE_SHOTS`` (default: the test's tmp_path), with the
PNGs matplotlib writes beside them. Without chromium the test is skipped, except under CI,
which must run it (.ci/run installs chromium).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from snapledger.cli import pictures

pytestmark = pytest.mark.chromium

#: Collects every <text> of the picture's SVG (its box as laid out), the SVG's box and each
#: hover title, and leaves them as JSON in the page for --dump-dom to print.
PROBE = """<script>
const svg = document.querySelector("svg");
const box = (e) => { const b = e.getBoundingClientRect();
  return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; };
const labels = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim())
  .map((t) => ({text: t.textContent, ...box(t)}));
const hovers = [...svg.querySelectorAll("g[class]")].map((g) => ({
  classes: g.getAttribute("class"),
  title: g.querySelector(":scope > title")?.textContent ?? null}));
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify({canvas: box(svg), labels, hovers});
document.body.appendChild(out);
</script>"""
SLACK = 0.5  # px: boxes that touch are apart
BASE = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)
STATUSES = ("REGISTERED", "EXPIRING", "DELETED", "REJECTED")


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI renders the pictures in chromium, which is not installed (.ci/run)")
        pytest.skip("chromium is not installed (apt-get install chromium): pictures not rendered")
    return found


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("SNAPLEDGER_PICTURE_SHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def a_busy_lineage() -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """60 snapshots over a day, bursts of them seconds apart, long ids, every status, a hold,
    a pin, the latest, a trim point and jobs in every kind of state."""
    snapshots = []
    for i in range(60):
        at = BASE + timedelta(minutes=25 * (i // 3), seconds=2 * (i % 3))
        snapshots.append(
            {
                "snapshot_id": f"01KQ{i:04d}-" + "restate-cluster-orders-partition-3-" * 2,
                "lsn": 1_000_000_000 + 1_500 * i,
                "status": STATUSES[0] if i >= 40 else STATUSES[i % 4],
                "registered_at": at.isoformat(),
                "total_bytes": 1_234_567 * (i + 1),
                "file_count": 3,
                "row_count": 10_000 * i,
                "holds": [{"hold_id": "h1", "reason": "legal", "by": "ops"}] if i == 12 else [],
                "pins": [{"job_id": "restore-7"}] if i == 45 else [],
                "expiry_cause": "beyond_max_count" if i % 4 == 2 and i < 40 else None,
            }
        )
    head = {"latest_snapshot_id": snapshots[-1]["snapshot_id"], "trim_lsn": 1_000_030_000}
    jobs = [
        {
            "job_id": f"{kind}-{n}",
            "job_kind": kind,
            "state": state,
            "stream": "orders-and-refunds-of-the-european-shops",
            "requested_at": (BASE + timedelta(hours=n)).isoformat(),
            "partitions": [
                {"partition": 3, "base_lsn": 1_000_000_000 + 9_000 * n, "target_lsn": 1_000_080_000}
            ],
        }
        for n, (kind, state) in enumerate(
            [("restore", "SUCCESS"), ("compact", "FAILED"), ("restore", "CANCELLED"),
             ("restore", "RUNNING"), ("restore", "SUBMITTED"), ("compact", "SUCCESS"),
             ("restore", "RUNNING")],
            start=1,
        )
    ]  # fmt: skip
    return snapshots, head, jobs


def a_plan_of_several_lineages() -> dict[str, Any]:
    reasons = [["latest", "newest"], ["held"], ["pinned"], ["generation"], ["too_young"]]
    causes = [["beyond_max_count"], ["older_than_max_age"], ["rejected"], ["expiring"]]
    lineages = []
    for n, (stream, lsn0) in enumerate(
        [("orders", 0), ("orders", 10**12), ("payments-and-refunds-of-the-european-shops", 5)]
    ):
        decided = [(r, "kept") for r in reasons] + [(c, "deleted") for c in causes]
        lineage: dict[str, Any] = {"stream": stream, "partition": n, "kept": [], "deleted": []}
        for i, (why, side) in enumerate(decided):
            lineage[side].append(
                {
                    "snapshot_id": f"01KQ{n}{i:03d}-" + "x" * 40,
                    "lsn": lsn0 + 1_000 * (len(decided) - i),
                    "status": "REGISTERED" if side == "kept" else "EXPIRING",
                    "registered_at": (BASE + timedelta(seconds=i)).isoformat(),
                    "reasons" if side == "kept" else "causes": why,
                }
            )
        lineage["trim_lsn"] = lsn0 + 4_500
        lineages.append(lineage)
    return {"lineages": lineages}


def draw_timeline() -> pictures.Picture:
    snapshots, head, jobs = a_busy_lineage()
    return pictures.timeline("orders-and-refunds-of-the-european-shops", 3, snapshots, head, jobs)


def draw_gc_plan() -> pictures.Picture:
    return pictures.gc_plan(a_plan_of_several_lineages())


def rendered(chromium: str, page: Path, profile: Path) -> dict[str, Any]:
    """The probe's measurements of ``page`` as headless Chromium lays it out."""
    probe = page.with_name(f"{page.stem}-probe.html")
    probe.write_text(page.read_text().replace("</body>", f"{PROBE}</body>"))
    ran = subprocess.run(
        [chromium, *HEADLESS, f"--user-data-dir={profile}", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', ran.stdout, re.DOTALL)
    assert found, f"chromium printed no measurements: {ran.returncode} {ran.stderr[-2000:]}"
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


HEADLESS = ("--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars")


def screenshot(chromium: str, page: Path, target: Path, canvas: Mapping[str, float]) -> None:
    size = f"--window-size={int(canvas['right']) + 24},{int(canvas['bottom']) + 48}"
    subprocess.run(
        [chromium, *HEADLESS, f"--user-data-dir={target.parent / '.profile'}", size,
         f"--screenshot={target}", page.as_uri()],
        capture_output=True, timeout=180, check=True,
    )  # fmt: skip
    assert target.read_bytes().startswith(b"\x89PNG")


def misplaced(measured: Mapping[str, Any]) -> list[str]:
    """Every label outside the canvas, and every two labels that overlap."""
    canvas, labels = measured["canvas"], measured["labels"]
    wrong = [
        f"{label['text']!r} leaves the canvas: {label} not in {canvas}"
        for label in labels
        if label["left"] < canvas["left"] - SLACK
        or label["top"] < canvas["top"] - SLACK
        or label["right"] > canvas["right"] + SLACK
        or label["bottom"] > canvas["bottom"] + SLACK
    ]
    for i, one in enumerate(labels):
        for other in labels[i + 1 :]:
            across = min(one["right"], other["right"]) - max(one["left"], other["left"])
            down = min(one["bottom"], other["bottom"]) - max(one["top"], other["top"])
            if across > SLACK and down > SLACK:
                wrong.append(f"{one['text']!r} and {other['text']!r} overlap")
    return wrong


def draw_one_snapshot() -> pictures.Picture:
    """A bootstrapped lineage: one snapshot at LSN 0, nothing else (degenerate ranges)."""
    snapshots, _, _ = a_busy_lineage()
    first = dict(snapshots[0], lsn=0, status="REGISTERED")
    return pictures.timeline("orders", 0, [first], {"latest_snapshot_id": first["snapshot_id"]})


#: Each picture, and how many marks (each with its hover details) it has at the least.
PICTURES: dict[str, tuple[Callable[[], pictures.Picture], int]] = {
    "timeline": (draw_timeline, 60 + 7 + 1),
    "gc-plan": (draw_gc_plan, 3 * (9 + 1 + 1)),
    "timeline-one-snapshot": (draw_one_snapshot, 1),
    "timeline-empty": (lambda: pictures.timeline("orders", 0, [], {}), 0),
    "gc-plan-empty": (lambda: pictures.gc_plan({"lineages": []}), 0),
}


@pytest.mark.parametrize("name", PICTURES)
def test_every_label_is_inside_the_canvas_and_apart_and_every_mark_has_hover_details(
    name, chromium, shots, tmp_path
):
    draw, least_marks = PICTURES[name]
    picture = draw()
    page = pictures.write(picture, tmp_path / f"{name}.html", name)
    for suffix in (".svg", ".png"):
        assert pictures.write(picture, shots / f"{name}{suffix}", name).stat().st_size > 0
    measured = rendered(chromium, page, tmp_path / "profile")
    assert len(measured["labels"]) >= 5  # a title, the axes' labels, the legend
    assert misplaced(measured) == []
    marked = [h for h in measured["hovers"] if h["classes"].split()[0] != "ring"]
    assert len(marked) >= least_marks
    assert all(h["title"] for h in measured["hovers"]), measured["hovers"][:3]
    screenshot(chromium, page, shots / f"{name}-chromium.png", measured["canvas"])


def test_the_timeline_has_every_snapshot_as_its_own_mark_with_its_details(chromium, tmp_path):
    """Snapshots seconds apart are each drawn (and hovered) on their own."""
    snapshots, _, _ = a_busy_lineage()
    page = pictures.write(draw_timeline(), tmp_path / "timeline.html", "timeline")
    measured = rendered(chromium, page, tmp_path / "profile")
    titles = [h["title"] for h in measured["hovers"] if h["classes"].startswith("snapshot ")]
    assert len(titles) == len(snapshots)
    for snapshot, title in zip(snapshots, sorted(titles, key=_lsn), strict=True):
        assert snapshot["snapshot_id"] in title and f"LSN {snapshot['lsn']:,}" in title
        assert "registered 2026-11-27" in title and " MiB in 3 file(s)" in title
    assert {"legal", "restore-7", "latest", "beyond_max_count"} <= set(
        re.findall(r"[\w-]+", " ".join(titles))
    )
    legend = {label["text"] for label in measured["labels"]}
    assert {"registered", "expiring", "deleted", "rejected", "latest", "held", "pinned"} <= legend
    assert {"trim point", "job success", "job failed", "job in flight"} <= legend


def _lsn(title: str) -> int:
    found = re.search(r"LSN ([\d,]+)", title)
    assert found
    return int(found.group(1).replace(",", ""))
