"""A GC plan as the CLI shows it (the table, the picture) says every reason and cause as
declared (``models/retention_reasons.py``): its word, its text and its marker, none
forgotten, none made up."""

from __future__ import annotations

import os
from typing import Any

import pytest
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from rich.console import Console

from snapledger.cli import pictures
from snapledger.cli.render import gc_plan as gc_table
from snapledger.errors import InvalidRequestError
from snapledger.models.retention_reasons import DeleteCause, KeepReason


def a_plan_of_every_reason_and_cause() -> dict[str, Any]:
    """One lineage: a kept snapshot per reason and a deleted one per cause, each first."""
    decided = [("kept", "reasons", r.value) for r in KeepReason]
    decided += [("deleted", "causes", c.value) for c in DeleteCause]
    lineage: dict[str, Any] = {"stream": "orders", "partition": 0, "kept": [], "deleted": []}
    for lsn, (side, key, why) in enumerate(decided, 1):
        snapshot = {"snapshot_id": f"S{lsn:03d}", "lsn": lsn * 10, "status": "REGISTERED"}
        lineage[side].append({**snapshot, key: [why]})
    return {"lineages": [lineage], "dry_run": True}


def drawn_markers(picture: pictures.Picture) -> dict[int, str]:
    """LSN -> the marker its snapshot is drawn with."""
    return {
        int(line.get_xdata()[0]): line.get_marker()
        for ax in picture.figure.axes
        for line in ax.get_lines()
        if line.get_marker() not in ("None", None, "")
    }


@pytest.mark.parametrize("member", [*KeepReason, *DeleteCause], ids=str)
def test_every_marker_is_one_matplotlib_draws(member) -> None:
    assert member.marker in MarkerStyle.markers


def test_the_picture_draws_each_snapshot_with_its_first_reasons_declared_marker() -> None:
    # Given a plan giving every reason and every cause first
    report = a_plan_of_every_reason_and_cause()
    # When it is drawn
    picture = pictures.gc_plan(report)
    # Then each snapshot has the marker its reason or cause declares
    lineage = report["lineages"][0]
    expected = {s["lsn"]: KeepReason(s["reasons"][0]).marker for s in lineage["kept"]}
    expected |= {s["lsn"]: DeleteCause(s["causes"][0]).marker for s in lineage["deleted"]}
    assert drawn_markers(picture) == expected
    # And the legend names each, in the declared order, with its marker
    [legend] = picture.figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    said = [f"first reason: {m.value.replace('_', ' ')}" for m in KeepReason]
    said += [f"first cause: {m.value.replace('_', ' ')}" for m in DeleteCause]
    assert labels == ["keep", "delete", *said, "trim point"]
    # And each snapshot's hover says its reason or cause with the declared text
    hovers = " ".join(mark.hover for mark in picture.marks.values())
    for member in (*KeepReason, *DeleteCause):
        assert f"{member.value} ({member.text})" in hovers, member
    handles = [h for h in legend.legend_handles if isinstance(h, Line2D)]
    assert [h.get_marker() for h in handles[: len(said)]] == [
        m.marker for m in (*KeepReason, *DeleteCause)
    ]


@pytest.mark.parametrize(
    ("side", "key", "word", "what"),
    [("kept", "reasons", "kept_for_luck", "reason"), ("deleted", "causes", "latest", "cause")],
)
def test_a_reason_or_cause_this_release_does_not_declare_is_refused_by_name(
    side, key, word, what
) -> None:
    # Given a plan (from a newer release, say) giving a word this one does not declare on
    # that side ("latest" is a reason, never a cause)
    report = a_plan_of_every_reason_and_cause()
    report["lineages"][0][side][0][key] = [word]
    # When it is drawn
    # Then it is refused, naming the word and what to do, not drawn with a made-up marker
    with pytest.raises(InvalidRequestError, match=rf"the plan gives the {what} '{word}'.*upgrade"):
        pictures.gc_plan(report)


def test_the_table_lists_every_declared_reason_and_cause() -> None:
    # Given a plan giving every reason and every cause
    report = a_plan_of_every_reason_and_cause()
    # When the CLI shows it as a table
    console = Console(width=400, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(gc_table(report))
    shown = console.export_text()
    # Then each is there, as declared
    for member in (*KeepReason, *DeleteCause):
        assert member.value in shown, member
