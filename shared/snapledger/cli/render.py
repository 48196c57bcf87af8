"""Readable tables for people, ``--json`` for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# Columns shown for lists of known things; anything else is shown as key: value lines.
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
    "kept": ("lsn", "snapshot_id", "reasons"),
    "deleted": ("lsn", "snapshot_id", "status"),
}


def render(answer: dict[str, Any], *, as_json: bool) -> str:
    if as_json:
        return json.dumps(answer, indent=2, sort_keys=True, default=str)
    if not answer.get("ok", True):
        lines = [f"error ({answer.get('error', 'failed')}): {answer.get('message', '')}"]
        lines += [f"  {f['field']}: {f['problem']}" for f in answer.get("fields", [])]
        return "\n".join(lines)
    return _render_mapping({k: v for k, v in answer.items() if k != "ok"})


def _render_mapping(data: dict[str, Any], indent: str = "") -> str:
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{indent}{key}:")
            lines.append(_table(value, COLUMNS.get(key), indent + "  "))
        elif isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.append(_render_mapping(value, indent + "  "))
        elif value is not None:
            lines.append(f"{indent}{key}: {_cell(value)}")
    return "\n".join(line for line in lines if line)


def _table(rows: list[dict[str, Any]], columns: Sequence[str] | None, indent: str) -> str:
    if columns is None:
        columns = tuple(dict.fromkeys(k for row in rows for k in row))
    shown = [c for c in columns if any(row.get(c) is not None for row in rows)]
    cells = [[_cell(row.get(c)) for c in shown] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(shown)]
    out = [indent + "  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True))]
    out += [indent + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)
