"""``snapledger timeline``: a partition's lineage drawn (``cli/pictures.py``); the picture
option ``gc --dry-run --plot`` shares.
"""

from __future__ import annotations

import click

from snapledger.cli import pictures
from snapledger.cli.app import (
    ANSWERED,
    PARTITION,
    STREAM,
    Options,
    _call,
    _show,
    cli,
    json_option,
    uses_registry,
)
from snapledger.cli.render import as_json
from snapledger.client.control import Snapledger

PICTURE = click.option(
    "--plot",
    "-o",
    "plot",
    type=click.Path(dir_okay=False, writable=True),
    help="Also draw it to this file: .svg, .png, or .html (hover a mark for its details).",
)


def _check_picture(path: str | None) -> None:
    if path is not None and not path.lower().endswith(pictures.FORMATS):
        raise click.BadParameter(
            f"{path}: a picture is written as {' or '.join(pictures.FORMATS)}",
            param_hint="--plot",
        )


@cli.command()
@STREAM
@PARTITION
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="The picture: .svg, .png, or .html (hover a mark for its details).",
)
@json_option
def timeline(stream: str, partition: int, output: str) -> int:
    """Draw a partition's lineage: snapshots on an LSN axis over registry time, coloured by
    status, the latest, holds, pins, the trim point, and jobs as spans."""
    _check_picture(output)
    return _timeline(stream=stream, partition=partition, output=output)


@uses_registry
def _timeline(
    client: Snapledger, options: Options, *, stream: str, partition: int, output: str
) -> int:
    listed = _call(lambda: client.snapshots(stream, partition, limit=1000))
    latest = _call(lambda: client.latest(stream, partition))
    for answer in (listed, latest):
        if not answer.get("ok", True):
            return _show(answer, options)
    jobs = _call(lambda: client.jobs(limit=1000)).get("jobs", [])
    drawn = pictures.timeline(stream, partition, listed.get("snapshots", []), latest["head"], jobs)
    written = pictures.write(drawn, output, f"{stream}/{partition}")
    if options.json:
        click.echo(as_json({"ok": True, "picture": str(written)}))
    else:
        click.echo(f"drew {stream}/{partition} to {written}")
    return ANSWERED
