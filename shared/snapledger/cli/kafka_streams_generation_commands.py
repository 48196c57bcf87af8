"""``snapledger kafka-streams generation`` (request a generation of a store) and
``snapledger kafka-streams rewind`` (rewind the stopped application to a COMPLETED one).
docs/kafka-streams.md, "Generations". Registered on the ``kafka-streams`` group when
``cli/main.py`` imports it; the options, the registry and the output are the group's
(``cli/kafka_streams_commands.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from snapledger.cli.app import Options, json_option
from snapledger.cli.kafka_streams_commands import (
    kafka_streams,
    registry_for,
    run_rows,
    state_dir_option,
    store_options,
)


@kafka_streams.command("generation")
@store_options
@click.option(
    "--deadline-minutes",
    type=click.IntRange(1, 7 * 24 * 60),
    default=60,
    show_default=True,
    help="How long the generation may stay open before it FAILS.",
)
@json_option
def generation(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    broker_timeout: float,
    deadline_minutes: int,
) -> int:
    """Request the store's next generation: every changelog partition's snapshot at or past
    its end offset now (the snapshotter's next runs complete it)."""
    from snapledger.kafka_streams.generation import request_generation

    options = click.get_current_context().ensure_object(Options)

    def work() -> list[Any]:
        with registry_for(options, root) as (registry, _uri, _deliver):
            return [
                request_generation(
                    registry,
                    bootstrap_servers,
                    application_id,
                    store,
                    deadline_minutes=deadline_minutes,
                    broker_timeout_s=broker_timeout,
                )
            ]

    # The registry's answer is printed as JSON with or without --json.
    return run_rows(work, lambda fields: json.dumps(fields, default=str))


@kafka_streams.command("rewind")
@store_options
@state_dir_option("The new instance's state.dir (its task folders must be empty).")
@click.option("--generation", "number", type=click.IntRange(1), help="Default: the newest.")
@json_option
def rewind(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    broker_timeout: float,
    state_dir: Path,
    number: int | None,
) -> int:
    """Rewind the stopped application to a COMPLETED generation: its changelogs made to agree,
    its input offsets reset, every task placed from its member snapshot."""
    from snapledger.kafka_streams.generation_rewind import GenerationRewind

    options = click.get_current_context().ensure_object(Options)

    def work() -> list[Any]:
        with registry_for(options, root) as (registry, uri, _deliver):
            done = GenerationRewind(
                registry,
                uri,
                bootstrap_servers,
                application_id,
                store,
                broker_timeout_s=broker_timeout,
            )
            return done.rewind(state_dir, number)

    return run_rows(work, _rewound_line)


def _rewound_line(task: dict[str, Any]) -> str:
    return (
        f"{task['task']}: from {task['snapshot_id']} at offset {task['lsn']}; input from "
        f"{task['input_offsets']}; {task['puts']} puts and {task['tombstones']} tombstones "
        "appended"
    )
