"""What the control client's action mixins share: an answer's type, and a payload without
the fields the caller left out."""

from __future__ import annotations

from typing import Any

#: A function's answer: its JSON object.
Answer = dict[str, Any]


def drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` without the fields whose value is None (the function's defaults apply)."""
    return {k: v for k, v in payload.items() if v is not None}
