"""``snapledger kafka-streams generation`` (request a generation of a store) and
``snapledger kafka-streams rewind`` (rewind the stopped application to a COMPLETED one).
docs/kafka-streams.md, "Generations". Registered on the ``kafka-streams`` group when
``cli/main.py`` imports it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from snapledger.cli.app import BAD_ARGUMENTS, Options, json_option
from snapledger.cli.kafka_streams_commands import _common, _registry, kafka_streams
from snapledger.errors import SnapledgerError


@kafka_streams.command("generation")
@_common
@click.option(
    "--deadline-minutes", type=click.IntRange(1, 7 * 24 * 60), default=60, show_default=True
)
@json_option
def generation(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    deadline_minutes: int,
) -> int:
    """Request the store's next generation: every changelog partition's snapshot at or past
    its end offset now (the snapshotter's next runs complete it)."""
    from snapledger.kafka_streams.generation import request_generation

    options = click.get_current_context().ensure_object(Options)
    try:
        with _registry(options, root) as (registry, _uri, _deliver):
            answer = request_generation(
                registry,
                bootstrap_servers,
                application_id,
                store,
                deadline_minutes=deadline_minutes,
            )
    except SnapledgerError as exc:
        click.echo(f"snapledger: {exc}", err=True)
        return BAD_ARGUMENTS
    click.echo(json.dumps(answer, default=str))
    return 0


@kafka_streams.command("rewind")
@_common
@click.option(
    "--state-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The new instance's state.dir (its task folders must be empty).",
)
@click.option("--generation", "number", type=click.IntRange(1), help="Default: the newest.")
@json_option
def rewind(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    state_dir: Path,
    number: int | None,
) -> int:
    """Rewind the stopped application to a COMPLETED generation: its changelogs made to agree,
    its input offsets reset, every task placed from its member snapshot."""
    from snapledger.kafka_streams.generation_rewind import GenerationRewind

    options = click.get_current_context().ensure_object(Options)
    try:
        with _registry(options, root) as (registry, uri, _deliver):
            done = GenerationRewind(registry, uri, bootstrap_servers, application_id, store)
            tasks = done.rewind(state_dir, number)
    except SnapledgerError as exc:
        click.echo(f"snapledger: {exc}", err=True)
        return BAD_ARGUMENTS
    for task in tasks:
        click.echo(
            json.dumps(asdict(task))
            if options.json
            else f"{task.task}: from {task.snapshot_id} at offset {task.lsn}; input from "
            f"{task.input_offsets}; {task.puts} puts and {task.tombstones} tombstones appended"
        )
    return 0
