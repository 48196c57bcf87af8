"""Pictures drawn from real answers (moto ledger, file store): every snapshot, the latest,
holds, pins, the trim point and jobs are in the timeline; every plan decision in the plan."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.cli import pictures
from snapledger.clock import ManualClock
from snapledger.models.ledger import LineageId
from snapledger.models.requests import LaunchRequest
from snapledger.services import queries
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from tests.gc.support import gc_deps
from tests.support import make_runtime, moto_ledger, write_segments, write_snapshot

SVG = "{http://www.w3.org/2000/svg}"
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
            ids.append(register_manifest(key, ledger=ledger, store=store, clock=clock).snapshot_id)
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
    svg = pictures.timeline("orders", 3, answers["snapshots"], answers["head"], answers["jobs"])
    root = parse(svg)
    marks = groups(root, "snapshot")
    assert len(marks) == len(answers["snapshots"]) == 5
    by_id = {g.get("data-snapshot-id"): g for g in marks}
    ids = answers["ids"]
    assert "latest" in by_id[ids[4]].get("class").split()
    assert [g for g in marks if "latest" in g.get("class").split()] == [by_id[ids[4]]]
    assert "held" in by_id[ids[1]].get("class").split()
    assert by_id[ids[0]].get("data-status") == "DELETED"  # not held, beyond min_count 2
    assert "pinned" in by_id[ids[3]].get("class").split()  # the restore's base (LSN 400)
    [trim] = [line for line in root.iter(f"{SVG}line") if line.get("class") == "trim"]
    assert int(trim.get("data-lsn")) == answers["head"]["trim_lsn"]
    [job] = groups(root, "job")
    assert (job.get("data-kind"), job.get("data-state")) == ("restore", "SUBMITTED")


def test_the_gc_plan_shows_each_decision_with_its_reasons(answers):
    report = answers["plan"]
    root = parse(pictures.gc_plan(report))
    [lineage] = report["lineages"]
    kept, deleted = groups(root, "plan-keep"), groups(root, "plan-delete")
    assert len(kept) == len(lineage["kept"]) and len(deleted) == len(lineage["deleted"])
    reasons = {g.get("data-snapshot-id"): g.get("data-reasons") for g in kept}
    assert "latest" in reasons[answers["ids"][4]] and "held" in reasons[answers["ids"][1]]
    assert [g.get("data-lineage") for g in groups_by_text(root)] == ["orders/3"]


def groups_by_text(root: ET.Element) -> list[ET.Element]:
    return [t for t in root.iter(f"{SVG}text") if t.get("class") == "lineage"]


def test_pictures_are_written_as_svg_or_html_only(tmp_path, answers):
    svg = pictures.timeline("orders", 3, answers["snapshots"], answers["head"])
    assert pictures.write(svg, tmp_path / "t.svg", "t").read_text() == svg
    page = pictures.write(svg, tmp_path / "t.html", "orders/3").read_text()
    assert page.startswith("<!doctype html>") and svg in page
    with pytest.raises(ValueError, match=r"t\.png: a picture is written as \.svg or \.html"):
        pictures.write(svg, tmp_path / "t.png", "t")
