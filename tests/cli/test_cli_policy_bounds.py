"""``policy set`` checks every number against its field's declared Bounds (lower and upper)
before it reads the policy or asks anything: exit 2, naming the option and the range in words."""

from __future__ import annotations

import pytest

from snapledger.cli import app as cli_app
from snapledger.cli import confirm
from snapledger.cli.policy_options import option_name
from snapledger.models.policy import MAX_MIN_COUNT, POLICY_FIELDS, PolicyField
from tests.cli.support import Recording, run_cli

NUMBERS = [f for f in POLICY_FIELDS if f.kind is not bool]


@pytest.fixture
def sent(monkeypatch):
    """A person at a terminal who would answer yes; the requests the CLI sends."""
    recording = Recording(answers={"policy_get": {"policy": {"min_count": 3}}})
    monkeypatch.setattr(cli_app, "_transport", lambda options: recording)
    monkeypatch.setattr(confirm, "interactive", lambda: True)
    return recording.sent


def _below(field: PolicyField) -> str:
    b = field.bounds
    if b.gt is not None:
        return str(b.gt)
    assert b.ge is not None, field.name  # every number is bounded below
    return str(int(b.ge) - 1) if field.kind is int else str(b.ge - 0.5)


def _above(field: PolicyField) -> str:
    assert field.bounds.le is not None, field.name
    return str(int(field.bounds.le) + 1) if field.kind is int else str(field.bounds.le * 2)


@pytest.mark.parametrize("field", NUMBERS, ids=lambda f: f.name)
@pytest.mark.parametrize("past", [_below, _above], ids=["below", "above"])
def test_a_number_past_its_bounds_is_refused_before_anything_is_read_or_asked(sent, field, past):
    ran = run_cli("policy", "set", "orders", option_name(field), past(field), input="y\n")
    assert ran.status == 2 and ran.out == ""
    assert option_name(field) in ran.err and "out of range: give a" in ran.err
    assert "Lower" not in ran.err + ran.out and "lowers retention" not in ran.err
    assert sent == []


def test_min_count_below_one_names_the_range_in_words(sent):
    for typed in ("-1", "0"):
        ran = run_cli("policy", "set", "orders", "--min-count", typed, input="y\n")
        assert ran.status == 2 and sent == []
        assert "Lower" not in ran.err
        assert f"--min-count': {typed} is out of range" in ran.err
        assert f"a whole number from 1 to {MAX_MIN_COUNT}" in ran.err


def test_a_fraction_for_a_count_is_refused_in_words(sent):
    ran = run_cli("policy", "set", "orders", "--min-count", "2.5")
    assert ran.status == 2 and "'2.5' is not a whole number from 1 to" in ran.err
    assert sent == []


@pytest.mark.parametrize("field", NUMBERS, ids=lambda f: f.name)
def test_a_number_at_its_bounds_is_sent(sent, field):
    b = field.bounds
    for edge in (b.ge, b.le):
        if edge is None:
            continue
        typed = str(int(edge)) if field.kind is int else str(edge)
        ran = run_cli("--json", "policy", "set", "orders", option_name(field), typed, "--yes")
        assert ran.status == 0, ran.err
        _, payload = sent[-1]
        assert payload[field.name] == edge
