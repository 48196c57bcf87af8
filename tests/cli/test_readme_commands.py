"""Every command README's CLI block shows is one the CLI accepts, as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from snapledger.cli.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> list[str]:
    section = README.read_text().split("**From the CLI**", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("snapledger ") and "..." not in line]


def _argv(line: str) -> list[str]:
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)  # an optional part, given
    line = line.replace("<snapshot-id>", "01JW8Z3K9Q7N4M2P6R8T0V2X4Y")
    return shlex.split(line)[1:]


def test_the_readme_shows_the_stream_snapshot_commands():
    shown = {_argv(line)[0] for line in _commands()}
    assert {"stream-snapshot", "generation", "generations", "restore-stream"} <= shown


@pytest.mark.parametrize("line", _commands())
def test_each_readme_command_parses(line):
    args = build_parser().parse_args(_argv(line))
    assert args.command == _argv(line)[0]
