"""Readable answers for people (rich tables, nested as the answer is), ``--json`` for scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from snapledger.cli.params import BASE_FORMS

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
    ),
    "events": (
        "seq",
        "type",
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
}
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
        return Group(_mapping({**body, "report": _without(report, "lineages")}), gc_plan(report))
    return _mapping(body)


def render_refusal(answer: dict[str, Any]) -> RenderableType:
    message = cli_syntax(str(answer.get("message", "")))
    fields = readable_fields(answer.get("fields") or [])
    if fields:  # the message lists them again, the raw way: its first clause only
        message = message.split(": ", 1)[0]
    head = Text(f"error ({answer.get('error', 'failed')}): ", style="bold red")
    head.append(message, style="default")
    if not fields:
        return head
    table = Table("field", "problem", box=None, pad_edge=False)
    for field, problem in fields:
        table.add_row(field, problem)
    return Group(head, table)


def gc_plan(report: dict[str, Any]) -> Table:
    """Lineage → snapshot → keep/delete → reasons: one row per lineage, a table inside."""
    table = Table(title="GC plan" if report.get("dry_run") else "GC", show_lines=True)
    table.add_column("lineage", no_wrap=True)
    table.add_column("snapshots", overflow="fold")
    table.add_column("trim_lsn")
    for lineage in report["lineages"]:
        label = f"{lineage.get('stream')}/{lineage.get('partition')}"
        table.add_row(label, _snapshot_decisions(lineage), _cell(lineage.get("trim_lsn")))
    if not report["lineages"]:
        table.add_row("(no lineage)", "", "")
    return table


def _snapshot_decisions(lineage: dict[str, Any]) -> RenderableType:
    rows = [(s, "keep", ", ".join(s.get("reasons") or [])) for s in lineage.get("kept") or []]
    rows += [(s, "delete", ", ".join(s.get("causes") or [])) for s in lineage.get("deleted") or []]
    if not rows:
        return Text("(no snapshot)")
    inner = Table("lsn", "snapshot_id", "decision", "reasons", box=None, pad_edge=False)
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
            parts.append(Text(f"{key}: {_cell(value)}"))
    return Group(*parts)


def _nested(key: str, value: dict[str, Any] | list[Any]) -> RenderableType:
    if isinstance(value, dict):
        table = Table("field", "value", show_header=False, box=None, pad_edge=False)
        for k, v in value.items():
            if v is not None and v not in ([], {}):
                table.add_row(k, _value(k, v))
        return table
    if all(isinstance(row, dict) for row in value):
        return _rows(value, COLUMNS.get(key))
    return Text(_cell(value))


def _rows(rows: list[dict[str, Any]], columns: Sequence[str] | None) -> Table:
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    shown = [c for c in columns if any(row.get(c) not in (None, [], {}) for row in rows)]
    table = Table(box=None, pad_edge=False)
    for column in shown:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_value(c, row.get(c)) for c in shown))
    return table


def _value(key: str, value: Any) -> RenderableType:
    if isinstance(value, dict | list) and value and not _is_scalar_list(value):
        return _nested(key, value)
    return _cell(value)


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


# -- refusals in the CLI's own words -------------------------------------------------------

#: The accepted forms of a field that is one of several shapes (a union), by its name.
ACCEPTED_FORMS = {"from": BASE_FORMS}
_UNION_BRANCH = re.compile(r"^(?:[A-Z]\w*|literal\[.*\])$")


def readable_fields(fields: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The fields at fault, one line each: a union's failed branches (``from.FromLsn.lsn``,
    ``from.literal['latest']``) become one line for the field, listing its accepted forms."""
    out: dict[str, str] = {}
    for entry in fields:
        field, problem = str(entry.get("field", "")), str(entry.get("problem", ""))
        parts = field.split(".")
        branch = next((i for i, p in enumerate(parts) if _UNION_BRANCH.match(p)), None)
        if branch is None:
            out.setdefault(field, problem)
            continue
        union = ".".join(parts[:branch])
        forms = ACCEPTED_FORMS.get(union, "one of its accepted forms")
        out.setdefault(union, f"not one of the accepted forms: {forms}")
    return list(out.items())


#: A console payload in a message, e.g. {"action": "jobs"}, and the CLI command it is.
_PAYLOAD = re.compile(r'\{"action": "(?P<action>\w+)"(?P<rest>[^{}]*)\}')
_PAIR = re.compile(r'"(?P<key>\w+)": (?P<value>"[^"]*"|\[[^\]]*\]|[^,}]+)')
_COMMANDS = {
    "jobs": "jobs",
    "job": "jobs show",
    "latest": "latest",
    "list": "list",
    "history": "history",
    "bootstrap": "bootstrap",
    "restore": "restore",
    "snapshot_stream": "stream-snapshot",
    "generation": "generation",
    "generations": "generations",
    "policy_get": "policy get",
}
_POSITIONAL = ("job_id", "stream", "partition", "generation")


def cli_syntax(message: str) -> str:
    """``message`` with each console payload it suggests written as the CLI command."""

    def command(match: re.Match[str]) -> str:
        name = _COMMANDS.get(match["action"])
        if name is None:
            return match[0]
        pairs = {m["key"]: m["value"].strip('"') for m in _PAIR.finditer(match["rest"])}
        words = ["snapledger", name, *(pairs.pop(k) for k in _POSITIONAL if k in pairs)]
        for key, value in pairs.items():
            shown = "0,1,..." if value == "[...]" else value.strip("[]").replace(" ", "")
            words += [f"--{key.replace('_', '-')}", shown]
        return "`" + " ".join(words) + "`"

    return _PAYLOAD.sub(command, message)
