"""The console action ↔ CLI command map is declared once, on the commands (``@sends``); a
refusal's suggested payload arrives as data and is written as the command that sends it."""

from __future__ import annotations

import click

from snapledger.cli.app import cli
from snapledger.cli.console_map import action_commands, as_command
from snapledger.errors import SOME_PARTITIONS
from tests.cli.support import run_cli

#: The map the CLI kept by hand before it was derived (cli/refusals.py ``_COMMANDS``).
_THE_HAND_KEPT_MAP = {
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


def _root() -> click.Context:
    return click.Context(cli, info_name="snapledger")


def test_the_map_derived_from_the_commands_names_what_the_hand_kept_one_did():
    derived = {action: path for action, (path, _) in action_commands(cli).items()}
    assert {a: derived.get(a) for a in _THE_HAND_KEPT_MAP} == _THE_HAND_KEPT_MAP


def test_a_payload_is_written_with_the_commands_own_arguments_and_options():
    stream = {"action": "snapshot_stream", "stream": "o", "partitions": SOME_PARTITIONS}
    assert as_command(_root(), stream) == "snapledger stream-snapshot o --partitions 0,1,..."
    job = {"action": "job", "job_id": "auto-compaction:orders/0:x"}
    assert as_command(_root(), job) == "snapledger jobs show auto-compaction:orders/0:x"
    assert as_command(_root(), {"action": "no-such-action"}) is None


def test_a_refusal_carries_its_suggested_payload_as_data(seeded):
    ran = run_cli("--local", "--json", "jobs", "--job-id", "nope")
    answer = ran.json()
    assert answer["message"] == 'there is no job nope: list jobs with {"action": "jobs"}'
    assert answer["suggestion"] == {
        "function": "query",
        "payload": {"action": "jobs"},
        "text": '{"action": "jobs"}',
    }


def test_a_querys_validation_is_said_as_the_command_typed(seeded):
    # Given a value only the function bounds (a page of at most 1000)
    ran = run_cli("--local", "list", "orders", "3", "--limit", "100000")
    # Then the refusal is the command's, as for a gc or launch request, not "the query"'s
    assert "`snapledger list` refused its arguments" in ran.out
    assert "query is not valid" not in ran.out
    [row] = [line for line in ran.out.splitlines() if line.startswith("--limit")]
    assert "1000" in row
