"""``snapledger kafka-streams``: snapshots of a Kafka Streams store's partitions made from its
changelog (``snapshot``), and an empty state directory seeded from them before the
application starts (``seed``, the init container's command). docs/kafka-streams.md.

Registered on the ``snapledger`` group (``cli/app.py``) when ``cli/main.py`` imports it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from snapledger.cli.app import BAD_ARGUMENTS, REFUSED, Options, cli, json_option
from snapledger.client.control import RequestRefusedError, Snapledger
from snapledger.client.transport import AwsTransport
from snapledger.errors import SnapledgerError
from snapledger.kafka_streams.changelog import (
    DEFAULT_BROKER_TIMEOUT_S,
    MAX_BROKER_TIMEOUT_S,
    MIN_BROKER_TIMEOUT_S,
    BrokerUnreachableError,
    ChangelogError,
)
from snapledger.kafka_streams.schedule import (
    DEFAULT_POLL_SECONDS,
    MAX_EVERY_RECORDS,
    MAX_EVERY_SECONDS,
    MAX_POLL_SECONDS,
    MIN_EVERY_SECONDS,
    MIN_POLL_SECONDS,
)
from snapledger.limits import MAX_PARTITION

if TYPE_CHECKING:
    from snapledger.local.transport import LocalTransport

_STORE_OPTIONS = [
    click.option("--bootstrap-servers", required=True, help="The Kafka cluster (host:port,...)."),
    click.option("--application-id", required=True, help="The application's application.id."),
    click.option(
        "--store",
        required=True,
        help="The store's name (its changelog is {application.id}-{store}-changelog).",
    ),
    click.option(
        "--root",
        help="The snapshot store, s3://bucket[/prefix] (with --local: the local runtime's, "
        "the default; another is refused).",
    ),
    click.option(
        "--broker-timeout",
        type=click.FloatRange(MIN_BROKER_TIMEOUT_S, MAX_BROKER_TIMEOUT_S),
        default=DEFAULT_BROKER_TIMEOUT_S,
        show_default=True,
        help="Seconds each request to the Kafka brokers waits for an answer: an unreachable "
        "cluster is an error after it.",
    ),
]


def store_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every ``kafka-streams`` command takes: the cluster, the application, the
    store and the snapshot store."""
    for option in reversed(_STORE_OPTIONS):
        f = option(f)
    return f


def state_dir_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--state-dir`` (required): a Kafka Streams instance's ``state.dir``."""
    return click.option(
        "--state-dir",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help=help,
    )


def _open_local(options: Options) -> LocalTransport:
    from snapledger.local.transport import LocalTransport

    return LocalTransport.open(options.home, function_logs=options.function_logs)


@contextmanager
def registry_for(options: Options, root: str | None) -> Iterator[tuple[Snapledger, str, Any]]:
    """The registry, the store root and what delivers a written snapshot's arrival (the
    local runtime's router; in AWS the S3 event does, so None)."""
    if options.local:
        transport = _open_local(options)
        try:
            # Only what lands in the local runtime's store is registered: another --root is
            # refused (LocalTransport.store_root), as the KTable checkpointer's --local is.
            yield Snapledger(transport), transport.store_root(root), transport.deliver
        finally:
            transport.close()
        return
    if root is None:
        raise click.UsageError("--root s3://bucket[/prefix] is required without --local")
    yield Snapledger(AwsTransport(stack_name=options.stack, region=options.region)), root, None


def exit_status(exc: SnapledgerError) -> int:
    """2 for a bad argument (the CLI's or the functions' validation of what it sent) or a
    broker or registry out of reach; 1 when the state refuses (the message says why): the
    registry refusing, a seed's state directory in use or a task folder no longer empty, a
    changelog the broker says is missing or unusable, a rewind's check or step, a catch-up
    refused or failed."""
    from snapledger.kafka_streams.catch_up import CatchUpError
    from snapledger.kafka_streams.generation_rewind import GenerationRewindError
    from snapledger.kafka_streams.seed import SeedError

    if isinstance(exc, RequestRefusedError):
        return BAD_ARGUMENTS if exc.answer.get("error") == "validation" else REFUSED
    if isinstance(exc, BrokerUnreachableError):
        return BAD_ARGUMENTS
    by_state = (ChangelogError, CatchUpError, SeedError, GenerationRewindError)
    return REFUSED if isinstance(exc, by_state) else BAD_ARGUMENTS


def run_rows(
    work: Callable[[], list[Any]], line: Callable[[dict[str, Any]], str] | None = None
) -> int:
    """Run ``work`` and print each row it returns (a dataclass or a dict): its JSON with
    ``--json``, else ``line(fields)``. A SnapledgerError is one line on stderr, exit as
    ``exit_status`` says."""
    options = click.get_current_context().ensure_object(Options)
    try:
        rows = work()
    except SnapledgerError as exc:
        click.echo(f"snapledger: {exc}", err=True)
        return exit_status(exc)
    for row in rows:
        _echo(row, options, line or _line)
    return 0


def _echo(row: Any, options: Options, line: Callable[[dict[str, Any]], str] | None = None) -> None:
    fields = row if isinstance(row, dict) else asdict(row)
    click.echo(json.dumps(fields, default=str) if options.json else (line or _line)(fields))


def _line(fields: dict[str, Any]) -> str:
    if "task" in fields:
        head = f"{fields['task']}: {fields['outcome']}"
        if fields["outcome"] == "seeded":
            head += f" from {fields['snapshot_id']} at offset {fields['lsn']}"
        elif fields["outcome"] == "kept":
            head += " (the task folder is not empty: left as it is)"
        else:
            head += " (no usable snapshot: the task restores from the changelog)"
        skips = [
            f"\n  skipped {s['snapshot_id']} ({s['lsn']}): {s['reason']}" for s in fields["skipped"]
        ]
        return head + "".join(skips)
    written = fields["written"]
    made = (
        f"snapshot {written['snapshot_id']} at offset {written['lsn']}"
        if written
        else "no snapshot"
    )
    return f"partition {fields['partition']}: {made}; {fields['note']}"


@cli.group("kafka-streams")
@json_option
def kafka_streams() -> None:
    """A Kafka Streams store's snapshots: make them from its changelog, seed a state dir."""


@kafka_streams.command("snapshot")
@store_options
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    type=click.IntRange(0, MAX_PARTITION),
    help="Only these (default: every one).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where each partition's working copy is kept between passes and runs (in "
    "DIR/working-copies; default: none kept by a single pass, a temporary folder kept for "
    "the sidecar's run).",
)
@click.option(
    "--every-records",
    type=click.IntRange(1, MAX_EVERY_RECORDS),
    help="Run as a sidecar: snapshot a partition once its changelog has this many "
    "records (offsets) past its latest snapshot.",
)
@click.option(
    "--every-seconds",
    type=click.IntRange(MIN_EVERY_SECONDS, MAX_EVERY_SECONDS),
    help="Run as a sidecar: snapshot a partition with new records once this long has "
    "passed since its latest snapshot.",
)
@click.option(
    "--poll-seconds",
    type=click.FloatRange(MIN_POLL_SECONDS, MAX_POLL_SECONDS),
    help="The sidecar reads the changelog's end offsets this often (default "
    f"{DEFAULT_POLL_SECONDS:g}; only with --every-records or --every-seconds).",
)
@json_option
def snapshot(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    broker_timeout: float,
    partitions: tuple[int, ...],
    work_dir: Path | None,
    every_records: int | None,
    every_seconds: int | None,
    poll_seconds: float | None,
) -> int:
    """Snapshot each partition with changelog records after its latest snapshot (the
    application keeps running); with --every-records and/or --every-seconds, keep doing so
    as each partition falls due, until SIGTERM or SIGINT."""
    from snapledger.kafka_streams.schedule import SnapshotSchedule
    from snapledger.kafka_streams.sidecar import SnapshotSidecar
    from snapledger.kafka_streams.snapshotter import StoreSnapshotter
    from snapledger.kafka_streams.working_copy import kept_under

    options = click.get_current_context().ensure_object(Options)
    scheduled = every_records is not None or every_seconds is not None
    if poll_seconds is not None and not scheduled:
        raise click.UsageError(
            "--poll-seconds sets the sidecar's polling: give --every-records N and/or "
            "--every-seconds T with it (without them the command snapshots once)"
        )

    def work() -> list[Any]:
        with registry_for(options, root) as (registry, uri, deliver):
            snapshotter = StoreSnapshotter(
                registry,
                uri,
                bootstrap_servers,
                application_id,
                store,
                on_written=deliver,
                broker_timeout_s=broker_timeout,
                keep_dir=None if work_dir is None else kept_under(work_dir),
            )
            if not scheduled:
                return snapshotter.snapshot(partitions or None, work_dir=work_dir)
            if not logging.getLogger().handlers:
                logging.basicConfig(level=logging.INFO, format="snapledger: %(message)s")
            SnapshotSidecar(
                snapshotter,
                SnapshotSchedule(every_records, every_seconds),
                partitions=partitions or None,
                poll_seconds=poll_seconds or DEFAULT_POLL_SECONDS,
                work_dir=work_dir,
                on_snapshot=lambda run: _echo(run, options),
            ).run()
            return []

    return run_rows(work)


@kafka_streams.command("seed")
@store_options
@state_dir_option("The application's state.dir.")
@click.option(
    "--tasks",
    default="all",
    show_default=True,
    help="Tasks to seed, e.g. 0_0,0_3, or all (every changelog partition).",
)
@click.option(
    "--subtopology",
    type=click.IntRange(0, 2**31 - 1),
    default=0,
    show_default=True,
    help="The store's subtopology, for --tasks all.",
)
@click.option(
    "--candidates",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="Snapshots tried per task, newest first.",
)
@json_option
def seed(
    *,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    root: str | None,
    broker_timeout: float,
    state_dir: Path,
    tasks: str,
    subtopology: int,
    candidates: int,
) -> int:
    """Put each task's newest usable snapshot into an empty state directory (run it before
    the application starts: an init container)."""
    from snapledger.kafka_streams.seed import StoreSeeder
    from snapledger.kafka_streams.seed_format import parse_task_id

    options = click.get_current_context().ensure_object(Options)

    def work() -> list[Any]:
        wanted = None if tasks == "all" else [parse_task_id(t) for t in tasks.split(",")]
        with registry_for(options, root) as (registry, uri, _):
            seeder = StoreSeeder(
                registry,
                uri,
                bootstrap_servers,
                application_id,
                store,
                candidates=candidates,
                broker_timeout_s=broker_timeout,
            )
            return seeder.seed(state_dir, wanted, subtopology=subtopology)

    return run_rows(work, lambda fields: _seeded_line(fields, application_id, store))


def _seeded_line(fields: dict[str, Any], application_id: str, store: str) -> str:
    """A task's line; with no changelog yet, the store's (``all``) names the topic."""
    if fields["outcome"] != "no-changelog":
        return _line(fields)
    from snapledger.kafka_streams.seed import EVERY_TASK
    from snapledger.kafka_streams.seed_format import changelog_topic

    topic = changelog_topic(application_id, store)
    head = topic if fields["task"] == EVERY_TASK else fields["task"]
    return (
        f"{head}: no changelog yet ({topic} does not exist: the application creates it when "
        "it first starts); nothing to seed"
    )
