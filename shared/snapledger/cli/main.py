"""``snapledger``: latest, list, history, bootstrap, restore, jobs, gc, hold, release, policy,
stream snapshots (stream-snapshot, generation, generations, restore-stream) and Restate
streams (restate heal, restate restore: ``cli/restate_commands.py``).

A thin layer over the control client (``snapledger.client.control.Snapledger``): click
parses the arguments, the client sends the console's payloads, rich prints the answer.
Targets a deployment in AWS (found through the stack's outputs; ``--stack``, ``--region``)
or the local runtime (``--local``). Readable tables by default, ``--json`` (anywhere on the
line) for scripts. Exit status: 0 answered, 1 refused (the answer says why), a job that
did not succeed, or a question answered no; 2 bad arguments (the CLI's or the functions'
validation of them), a destructive command with no one to ask and no --yes, or the
deployment or local runtime could not be reached.

The commands live in modules by group, registered on the ``snapledger`` group
(``cli/app.py``) as they are imported here.
"""

from __future__ import annotations

import sys

import click

from snapledger.cli import (  # noqa: F401  (each module registers its commands)
    job_commands,
    kafka_streams_commands,
    kafka_streams_generation_commands,
    local_commands,
    picture_commands,
    producer_offsets_commands,
    query_commands,
    restate_commands,
    retention_commands,
    stream_commands,
)
from snapledger.cli.app import ANSWERED, NOT_CONFIRMED, REFUSED, cli

__all__ = ["cli", "main"]


def main(argv: list[str] | None = None) -> int:
    """The console script: the exit status (0 answered, 1 refused, 2 bad arguments or
    unreachable)."""
    try:
        status = cli.main(args=argv, prog_name="snapledger", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as bad:
        bad.show()
        return bad.exit_code
    except click.Abort:
        click.echo(NOT_CONFIRMED, err=True)
        return REFUSED
    return status if isinstance(status, int) else ANSWERED


if __name__ == "__main__":
    sys.exit(main())
