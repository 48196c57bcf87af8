"""A handler's parse-and-refuse block is written once (``Intake``): a malformed event is
answered naming its fields and counted; only the parse is guarded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from snapledger.entrypoints.answers import Intake

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


class _Counted:
    def __init__(self) -> None:
        self.names: list[str] = []

    def add_metric(self, name: str, unit: str, value: float) -> None:
        self.names.append(name)


class _Ask(BaseModel):
    stream: str


_INTAKE = Intake(_Ask.model_validate, "ask", "Ask_invalid", expected="{stream}")


def test_no_handler_writes_its_own_parse_and_refuse_block():
    # Given every handler module
    caught = [
        f"{path.name}:{node.lineno}"
        for path in sorted(FUNCTIONS.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ExceptHandler) and "ValidationError" in ast.unparse(node.type or [])
    ]
    # Then none catches a ValidationError itself: each hands its parser to an Intake
    assert caught == []


def test_a_malformed_event_is_answered_naming_its_field_and_counted():
    metrics = _Counted()
    answer = _INTAKE.answer({}, metrics, lambda ask: {"ok": True, "stream": ask.stream})
    assert answer == {
        "ok": False,
        "error": "validation",
        "message": "the ask is not valid: stream: required. Expected {stream}",
        "fields": [{"field": "stream", "problem": "required"}],
    }
    assert metrics.names == ["Ask_invalid"]


def test_a_parsed_event_is_answered_and_an_error_past_the_parse_raises():
    metrics = _Counted()
    assert _INTAKE.answer({"stream": "o"}, metrics, lambda a: {"ok": True, "stream": a.stream}) == {
        "ok": True,
        "stream": "o",
    }

    def fails(_: _Ask) -> dict[str, object]:
        _Ask.model_validate({})  # a bug past the parse: raised, not answered as the caller's
        return {}

    with pytest.raises(ValidationError):
        _INTAKE.answer({"stream": "o"}, metrics, fails)
    assert metrics.names == []
