"""Running the CLI in-process (click's CliRunner) against a transport the test chooses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from click.testing import CliRunner, Result

from snapledger.cli import main as cli


@dataclass
class Ran:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*argv: str, input: str | None = None) -> Ran:
    """``snapledger ARGV`` with CliRunner: exit status, stdout (metrics lines left out), stderr."""
    result: Result = CliRunner().invoke(cli.cli, list(argv), prog_name="snapledger", input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    out = "\n".join(line for line in result.stdout.splitlines() if not line.startswith('{"_aws"'))
    return Ran(result.exit_code, out, result.stderr)


@dataclass
class Recording:
    """A transport that records each payload and answers with ``answers[action]`` (or ok)."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((function, payload))
        action = payload.get("action") or ("gc" if function == "gc" else function)
        return {"ok": True, **self.answers.get(action, {})}
