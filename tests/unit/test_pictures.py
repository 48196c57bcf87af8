"""Pictures drawn from real answers (moto ledger, file store): every snapshot, the latest,
holds, pins, the trim point and jobs are in the timeline; every plan decision in the plan."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.cli import pictures
from snapledger.clock import ManualClock
from snapledger.extras import MissingExtraError
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.services import queries
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import gc_deps
from tests.support import make_runtime, moto_ledger, write_segments, write_snapshot

SVG = "{http://www.w3.org/2000/svg}"
REPO = Path(__file__).resolve().parents[2]
ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def answers(tmp_path):
    """A lineage with 5 snapshots (one held), a GC run (one deleted, the trim point), a
    restore job (pinning its base), and a dry run's plan, as the functions answer them."""
    clock = ManualClock()
    store = FileObjectStore(tmp_path / "root")
    with moto_ledger() as ledger:
        rt = make_runtime(ledger, store, clock)
        ids = []
        for lsn in (100, 200, 300, 400, 500):
            key = write_snapshot(store, "orders", 3, lsn)
            ids.append(
                register_manifest(
                    key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY
                ).snapshot_id
            )
            clock.advance(timedelta(hours=1))
        write_segments(store, "orders", 3, (0, 600))
        hold_snapshot(ledger, ORDERS_3, ids[1], clock=clock, reason="audit")
        default = rt.gc.default_policy()
        set_policy(
            rt.streams, "orders", {"min_count": 2, "min_age_hours": 0}, default=default, clock=clock
        )
        deps = gc_deps(ledger, store, clock)
        run_gc(deps)
        request = LaunchRequest.model_validate(
            {"action": "restore", "stream": "orders", "partition": 3, "from": {"lsn": 450}}
        )
        launch(
            request,
            request_id="r",
            deps=LaunchDeps(
                ledger=ledger, jobs=rt.jobs, runner=rt.runner, store=store, clock=clock
            ),
        )
        plan = run_gc(deps, dry_run=True).to_dict()
        yield {
            "ids": ids,
            "snapshots": [
                s.model_dump(mode="json") for s in queries.list_snapshots(ledger, ORDERS_3).items
            ],
            "head": queries.latest(ledger, ORDERS_3).model_dump(mode="json"),
            "jobs": [j.model_dump(mode="json") for j in rt.jobs.list_jobs().items],
            "plan": plan,
        }


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if cls in g.get("class", "").split()]


def test_the_timeline_shows_every_snapshot_the_latest_holds_pins_trim_and_jobs(answers):
    picture = pictures.timeline("orders", 3, answers["snapshots"], answers["head"], answers["jobs"])
    root = parse(picture.svg)
    marks = groups(root, "snapshot")
    assert len(marks) == len(answers["snapshots"]) == 5
    by_id = {g.get("data-snapshot-id"): g for g in marks}
    ids = answers["ids"]
    assert "latest" in by_id[ids[4]].get("class").split()
    assert [g for g in marks if "latest" in g.get("class").split()] == [by_id[ids[4]]]
    assert "held" in by_id[ids[1]].get("class").split()
    assert by_id[ids[0]].get("data-status") == "DELETED"  # not held, beyond min_count 2
    assert "pinned" in by_id[ids[3]].get("class").split()  # the restore's base (LSN 400)
    [trim] = groups(root, "trim")
    assert int(trim.get("data-lsn")) == answers["head"]["trim_lsn"]
    [job] = groups(root, "job")
    assert (job.get("data-kind"), job.get("data-state")) == ("restore", "SUBMITTED")


def test_each_mark_is_detailed_on_hover(answers):
    """The id, LSN, status, size, registered time and why: a <title>, not a label."""
    picture = pictures.timeline("orders", 3, answers["snapshots"], answers["head"])
    root = parse(picture.svg)
    by_id = {g.get("data-snapshot-id"): g for g in groups(root, "snapshot")}
    held, deleted = by_id[answers["ids"][1]], by_id[answers["ids"][0]]
    hover = held.find(f"{SVG}title").text
    assert answers["ids"][1] in hover and "LSN 200: REGISTERED (held)" in hover
    assert "held" in hover and "audit" in hover and "registered 20" in hover
    assert " B in " in hover or "iB in " in hover  # its size
    assert "chosen by GC: unprotected: not the latest" in deleted.find(f"{SVG}title").text
    # no snapshot id is written on the canvas: labels are axes, titles and the legend
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert all(sid not in texts for sid in answers["ids"])
    assert {"registered", "expiring", "deleted", "rejected", "latest", "held", "pinned"} <= set(
        texts.split()
    )
    assert "trim point" in texts and "LSN" in texts and "registered (UTC)" in texts


def test_the_gc_plan_shows_each_decision_with_its_reasons(answers):
    report = answers["plan"]
    root = parse(pictures.gc_plan(report).svg)
    [lineage] = report["lineages"]
    kept, deleted = groups(root, "plan-keep"), groups(root, "plan-delete")
    assert len(kept) == len(lineage["kept"]) and len(deleted) == len(lineage["deleted"])
    reasons = {g.get("data-snapshot-id"): g.get("data-reasons") for g in kept}
    assert "latest" in reasons[answers["ids"][4]] and "held" in reasons[answers["ids"][1]]
    hover = {g.get("data-snapshot-id"): g.find(f"{SVG}title").text for g in kept}
    assert "reasons: " in hover[answers["ids"][1]] and "held" in hover[answers["ids"][1]]
    assert [g.get("data-lineage") for g in groups(root, "lineage")] == ["orders/3"]


def test_pictures_are_written_as_svg_png_or_html(tmp_path, answers):
    picture = pictures.timeline("orders", 3, answers["snapshots"], answers["head"])
    assert pictures.write(picture, tmp_path / "t.svg", "t").read_text() == picture.svg
    page = pictures.write(picture, tmp_path / "t.html", "orders/3").read_text()
    assert page.startswith("<!doctype html>") and "<title>orders/3</title>" in page
    assert page.count('class="snapshot ') == 5 and "<?xml" not in page
    png = pictures.write(picture, tmp_path / "t.png", "t").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(
        ValueError, match=r"t\.pdf: a picture is written as \.svg or \.png or \.html"
    ):
        pictures.write(picture, tmp_path / "t.pdf", "t")


def test_without_matplotlib_a_picture_names_the_extra_to_install(monkeypatch, answers):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingExtraError, match=r"matplotlib, .*: pip install 'snapledger\[cli\]'"):
        pictures.timeline("orders", 3, answers["snapshots"], answers["head"])


def test_the_readme_shows_a_timeline():
    readme = (REPO / "README.md").read_text()
    assert "](docs/images/timeline.png)" in readme
    assert (REPO / "docs" / "images" / "timeline.png").read_bytes().startswith(b"\x89PNG")


def test_the_command_starts_without_loading_matplotlib():
    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, snapledger.cli.main; print('matplotlib' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == "False"
