"""Refusals in the words of the command the user typed: its name, its options, the accepted
form of a value (never a regular expression nor the function's payload)."""

from __future__ import annotations

from tests.cli.support import run_cli


def test_a_functions_validation_names_the_command_and_the_option_typed(seeded):
    ran = run_cli("--local", "hold", "orders", "3", seeded[0], "--by", "x" * 300)
    assert ran.status == 2
    assert "`snapledger hold` refused its arguments" in ran.out
    assert "gc request" not in ran.out
    [row] = [line for line in ran.out.splitlines() if "at most" in line]
    assert row.split()[0] == "--by"


def test_a_malformed_id_is_refused_with_its_form_in_words(seeded):
    ran = run_cli("--local", "hold", "orders", "3", "not-an-id")
    said = ran.out + ran.err
    assert ran.status == 2 and "SNAPSHOT_ID" in said and "26 characters" in said
    assert "pattern" not in said and "[0-9A-H" not in said and "gc request" not in said


def test_a_snapshot_id_argument_takes_either_layouts_id():
    from snapledger.cli.params import SNAPSHOT_ID

    assert SNAPSHOT_ID.convert("snap_16JRxlSCK1LJ3Z77LmT8Pap", None, None) == (
        "snap_16JRxlSCK1LJ3Z77LmT8Pap"  # a Restate id, kept as typed
    )
    assert SNAPSHOT_ID.convert("01j8amj9s95949yc1atz6ttb94", None, None) == (
        "01J8AMJ9S95949YC1ATZ6TTB94"  # a ULID typed in lower case
    )
