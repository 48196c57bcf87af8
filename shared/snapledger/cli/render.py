"""Readable answers for people (rich tables, nested as the answer is), ``--json`` for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from snapledger.cli.refusals import render_refusal

# Columns shown for lists of known things (--json has every field); other lists show all.
COLUMNS = {
    "snapshots": (
        "lsn",
        "snapshot_id",
        "status",
        "epoch",
        "file_count",
        "total_bytes",
        "registered_at",
        "reason",  # a REJECTED one's (readable_snapshot)
    ),
    "events": (
        "seq",
        "type",
        "state",
        "at",
        "snapshot_id",
        "lsn",
        "job_id",
        "reason",
        "version",
        "changed",
        "by",
    ),
    "jobs": ("job_id", "job_kind", "stream", "state", "run_id", "updated_at"),
    # a Restate heal's outcome per partition
    "outcomes": ("partition", "state", "names", "healed_to", "problems", "note"),
}
#: Columns of free text: wrapped at word boundaries. Every other value (ids, times, names,
#: numbers) is never wrapped: cut with an ellipsis when the terminal is too narrow
#: (``--json`` has it whole).
TEXT = frozenset(
    {
        "reason",
        "reasons",
        "causes",
        "message",
        "failure_reason",
        "problem",
        "problems",
        "changed",
        "note",
    }
)
#: The most of a rejection's code and reason ``list``'s table shows; past it, cut and marked
#: (a row then fits ``PIPE_WIDTH`` on one line).
REASON_CHARS = 100
CUT = "… (cut: --json has it whole)"
#: A job's state before its first reported change.
FIRST_JOB_STATE = "REQUESTED"
#: What a width-less output (a pipe, a file, a test) is laid out to: wide enough that
#: ids and times are never cut.
PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr); when it is not a terminal, laid out wide
    and lines of text never broken (a grep finds a whole message)."""
    terminal = Console(stderr=stderr).is_terminal
    return Console(stderr=stderr, width=None if terminal else PIPE_WIDTH, soft_wrap=not terminal)


def as_json(answer: dict[str, Any]) -> str:
    return json.dumps(answer, indent=2, sort_keys=True, default=str)


def render(answer: dict[str, Any]) -> RenderableType:
    """An answer as people read it: a refusal's reason, a GC plan by lineage, or tables."""
    if not answer.get("ok", True):
        return render_refusal(answer)
    body = {k: v for k, v in answer.items() if k != "ok"}
    report = body.get("report")
    if isinstance(report, dict) and isinstance(report.get("lineages"), list):
        summary = _without(report, "lineages")
        if isinstance(summary.get("counts"), dict):  # a dozen counters, most of them 0
            summary["counts"] = {k: v for k, v in summary["counts"].items() if v != 0}
        return Group(gc_plan(report), _mapping({**body, "report": summary}))
    return _mapping(body)


def gc_plan(report: dict[str, Any]) -> Table:
    """Lineage → snapshot → keep/delete → reasons: one row per lineage, a table inside,
    and under it what the run found there: its heal outcome, notes and errors."""
    table = Table(title="GC plan" if report.get("dry_run") else "GC", show_lines=True)
    table.add_column("lineage", no_wrap=True, overflow="ellipsis")
    table.add_column("snapshots")
    table.add_column("trim_lsn", no_wrap=True)
    for lineage in report["lineages"]:
        label = f"{lineage.get('stream')}/{lineage.get('partition')}"
        cell = Group(_snapshot_decisions(lineage), *map(Text, lineage_findings(lineage)))
        table.add_row(label, cell, _cell(lineage.get("trim_lsn")))
    if not report["lineages"]:
        table.add_row("(no lineage)", "", "")
    return table


def lineage_findings(lineage: dict[str, Any]) -> list[str]:
    """What a GC run found in a lineage besides its decisions, one line each: the heal
    outcome of a Restate partition (with each problem of the snapshot its latest.json
    named), the run's notes (e.g. a snapshot Restate evicted), and its errors."""
    lines = []
    heal = lineage.get("heal")
    if isinstance(heal, dict):
        named, healed_to = heal.get("names"), heal.get("healed_to")
        pointer = "" if named is None else f"latest.json named {named}"
        if healed_to is not None:
            pointer += f" → {healed_to}"
        lines.append(f"heal: {heal.get('state')}" + (f" ({pointer})" if pointer else ""))
        lines += [f"  broken: {problem}" for problem in heal.get("problems") or []]
        if heal.get("note"):
            lines.append(f"  {heal['note']}")
    lines += [f"note: {note}" for note in lineage.get("notes") or []]
    lines += [f"error: {error}" for error in lineage.get("errors") or []]
    return lines


def _snapshot_decisions(lineage: dict[str, Any]) -> RenderableType:
    rows = [(s, "keep", ", ".join(s.get("reasons") or [])) for s in lineage.get("kept") or []]
    rows += [(s, "delete", ", ".join(s.get("causes") or [])) for s in lineage.get("deleted") or []]
    if not rows:
        return Text("(no snapshot)")
    inner = Table(box=None, pad_edge=False)
    for column in ("lsn", "snapshot_id", "decision", "reasons"):
        _add_column(inner, column)
    for snapshot, decision, reasons in sorted(rows, key=lambda r: -int(r[0].get("lsn") or 0)):
        style = "green" if decision == "keep" else "red"
        inner.add_row(
            _cell(snapshot.get("lsn")),
            _cell(snapshot.get("snapshot_id")),
            Text(decision, style=style),
            reasons,
        )
    return inner


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _mapping(data: dict[str, Any]) -> RenderableType:
    """Scalars as ``key: value`` lines; nested mappings and lists as (nested) tables."""
    parts: list[RenderableType] = []
    for key, value in data.items():
        if value is None or value in ([], {}):
            continue
        if isinstance(value, dict | list) and not _is_scalar_list(value):
            parts.append(Text(f"{key}:", style="bold"))
            parts.append(_nested(key, value))
        else:
            parts.append(_line(f"{key}: {_cell(value)}", key))
    return Group(*parts)


def _nested(key: str, value: dict[str, Any] | list[Any]) -> RenderableType:
    if isinstance(value, dict):
        table = Table("field", "value", show_header=False, box=None, pad_edge=False)
        for k, v in value.items():
            if v is not None and v not in ([], {}):
                table.add_row(k, _value(k, v))
        return table
    if all(isinstance(row, dict) for row in value):
        if key == "events":
            value = [readable_event(row) for row in value]
        if key == "snapshots":
            value = [readable_snapshot(row) for row in value]
        if key in ("events", "transitions"):
            value = with_transitions(value)
        return _rows(value, COLUMNS.get(key))
    return Text(_cell(value))


def _rows(rows: list[dict[str, Any]], columns: Sequence[str] | None) -> RenderableType:
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    shown = [c for c in columns if any(row.get(c) not in (None, [], {}) for row in rows)]
    return FittedRows(rows, shown)


class FittedRows:
    """A list of records as a table fitted to the width it is given: numbers, states and
    kinds whole; free text wrapped first, then ids cut in the middle (``01M8AM…ATZ6TTB94``:
    ULIDs made close together share their first characters), then times; never a line
    wrapped mid-id."""

    GAP = 2  # the padding between two columns (none at the edges)

    def __init__(self, rows: list[dict[str, Any]], columns: list[str]) -> None:
        self.rows, self.columns = rows, columns

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths, hidden = self._widths(console, options)
        columns = [c for c in self.columns if c not in hidden]
        table = Table(box=None, pad_edge=False)
        for column in columns:
            _add_column(table, column, width=widths.get(column))
        for row in self.rows:
            cells: list[RenderableType] = []
            for column in columns:
                cell = _value(column, row.get(column))
                width = widths.get(column)
                if width is not None and _is_id(column) and isinstance(cell, Text):
                    cell = Text(_middle_cut(cell.plain, width), no_wrap=True)
                cells.append(cell)
            table.add_row(*cells)
        yield table
        if hidden:
            yield Text(f"(not shown at this width: {', '.join(hidden)}; --json has them)")

    def _widths(
        self, console: Console, options: ConsoleOptions
    ) -> tuple[dict[str, int], list[str]]:
        """The width of each column that must be narrower than its content, and the last
        columns left out when even that is too wide (the first two always shown)."""
        natural = {
            c: max(
                [len(c)]
                + [
                    Measurement.get(console, options, _value(c, r.get(c))).maximum
                    for r in self.rows
                ]
            )
            for c in self.columns
        }
        nested = {c for c in self.columns if not all(_flat(r.get(c)) for r in self.rows)}
        excess = sum(natural.values()) + self.GAP * (len(self.columns) - 1) - options.max_width
        widths: dict[str, int] = {}
        for shrinks, floor in ((lambda c: _is_text(c) or c in nested, 12), (_is_id, 12)):
            for column in sorted(self.columns, key=lambda c: -natural[c]):
                if excess > 0 and shrinks(column) and natural[column] > floor:
                    cut = min(excess, natural[column] - floor)
                    widths[column] = natural[column] - cut
                    excess -= cut
        later = list(reversed(self.columns[2:]))  # times first, then from the right
        hidden: list[str] = []
        for column in [c for c in later if _is_time(c)] + [c for c in later if not _is_time(c)]:
            if excess <= 0:
                break
            hidden.append(column)
            excess -= widths.get(column, natural[column]) + self.GAP
        return widths, [c for c in self.columns if c in hidden]


def _add_column(table: Table, name: str, *, width: int | None = None) -> None:
    if _is_text(name):
        table.add_column(name, overflow="fold", max_width=width)
    else:
        table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=width)


def _is_text(column: str) -> bool:
    return column in TEXT


def _is_id(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def _is_time(column: str) -> bool:
    return column == "at" or column.endswith("_at")


def _flat(value: Any) -> bool:
    return not isinstance(value, dict | list) or _is_scalar_list(value)


def _middle_cut(text: str, width: int) -> str:
    """``text`` in ``width`` characters: its start, an ellipsis, its end."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _value(key: str, value: Any) -> RenderableType:
    if isinstance(value, dict | list) and value and not _is_scalar_list(value):
        return _nested(key, value)
    return _line(_cell(value), key)


def _line(text: str, key: str) -> Text:
    """A value as one line (cut with an ellipsis if it must be), free text wrapped."""
    if key in TEXT:
        return Text(text)
    return Text(text, no_wrap=True, overflow="ellipsis")


def readable_event(row: dict[str, Any]) -> dict[str, Any]:
    """A history row in the columns ``COLUMNS["events"]`` shows: a repoint's from → to in
    ``changed`` and its cause in ``reason``; a broken snapshot's files at fault in
    ``reason``; an eviction's change of status in ``changed``."""
    kind = row.get("type")
    if kind == "ProducerLatestRepointed":
        before = f"{row.get('previous_snapshot_id') or '?'} (LSN {_cell(row.get('previous_lsn'))})"
        after = f"{row.get('snapshot_id')} (LSN {_cell(row.get('lsn'))})"
        cause = str(row.get("cause") or "")
        why = f"{cause}: {row['reason']}" if row.get("reason") else cause
        return {**row, "changed": f"latest.json: {before} → {after}", "reason": why}
    if kind == "SnapshotFoundBroken":
        return {**row, "reason": "broken: " + "; ".join(map(str, row.get("problems") or []))}
    if kind == "SnapshotEvicted":
        return {**row, "changed": "REGISTERED → DELETED (evicted by its producer)"}
    return row


def readable_snapshot(row: dict[str, Any]) -> dict[str, Any]:
    """A snapshot row with a REJECTED one's code and reason in ``reason``, at most
    ``REASON_CHARS`` characters (a longer one cut and marked ``CUT``)."""
    why = row.get("rejection_reason")
    if not why:
        return row
    code = row.get("rejection_code")
    text = f"{code}: {why}" if code else str(why)
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - len(CUT)] + CUT
    return {**row, "reason": text}


def with_transitions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Job events or a job's transitions, each change of state shown from the state before
    (``RUNNING → SUCCESS``), as the rows before it tell (an event's ``… → RUNNING`` if none
    does: its job was requested on an earlier page)."""
    states: dict[str, str] = {}
    out = []
    for row in rows:
        job = str(row.get("job_id", ""))
        kind, state = row.get("type"), row.get("state")
        shown = row
        if kind == "JobRequested":
            states[job] = FIRST_JOB_STATE
        elif state is not None and kind in (None, "JobStateChanged"):
            before = states.get(job, "…" if kind else None)
            shown = {**row, "state": state if before is None else f"{before} → {state}"}
            states[job] = str(state)
        out.append(shown)
    return out


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(v, dict | list) for v in value)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    return str(value)
