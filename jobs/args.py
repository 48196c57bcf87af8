"""The job's arguments: one schema for EMR Serverless, ``python -m jobs.entrypoint`` and
in-process callers (docs/jobs.md describes every flag).

``parse_job_args`` turns a command line into a ``JobArgs``; in-process callers build
``JobArgs`` directly and get the same checks from ``JobArgs.validate``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from jobs.errors import JobArgumentError
from jobs.layout import MAX_LSN, is_valid_job_id, is_valid_stream, snapshot_location
from snapledger.core.coverage import LATEST_AVAILABLE
from snapledger.job_kinds import JOB_KIND_NAMES as JOB_KINDS
from snapledger.job_kinds import JOB_KINDS as KIND_TABLE
from snapledger.job_kinds import Base, JobKind

NO_BASE = "none"
DEFAULT_MAX_ROWS_PER_FILE = 10_000_000


@dataclass(frozen=True)
class JobArgs:
    """One job over some partitions of one stream.

    ``bases`` maps a partition to its base snapshot's prefix (relative to ``root``); a
    partition without an entry starts from empty state (LSN -1). ``target_lsn`` None
    means each partition's latest available LSN: the end of its changelog's contiguous
    run of segments after the base. ``targets`` gives a partition its own target (over
    ``target_lsn``).
    """

    kind: JobKind
    root: str
    stream: str
    partitions: tuple[int, ...]
    job_id: str
    target_lsn: int | None = None
    bases: Mapping[int, str] = field(default_factory=dict)
    targets: Mapping[int, int] = field(default_factory=dict)
    epoch: int = 0
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE

    def target_for(self, partition: int) -> int | None:
        """The partition's target LSN (None: the end of its changelog)."""
        return self.targets.get(partition, self.target_lsn)

    def validate(self) -> JobArgs:
        """Return self if the arguments describe a job that can run, else raise."""
        problems = list(self._problems())
        if problems:
            raise JobArgumentError("; ".join(problems))
        return self

    def _problems(self) -> list[str]:
        problems: list[str] = []
        if self.kind not in JOB_KINDS:
            problems.append(f"kind {self.kind!r} is not one of {', '.join(JOB_KINDS)}")
        if "://" not in self.root:
            problems.append(f"root {self.root!r} must be a URI such as s3://bucket or file:///dir")
        if not is_valid_stream(self.stream):
            problems.append(
                f"stream {self.stream!r} is not valid: use 1-128 letters, digits, '.', '_' "
                "or '-', starting with a letter or digit"
            )
        if not is_valid_job_id(self.job_id):
            problems.append(f"job id {self.job_id!r} is not valid: use the stream-name alphabet")
        if not self.partitions:
            problems.append("no partitions given")
        if len(set(self.partitions)) != len(self.partitions):
            problems.append("partitions are repeated")
        if any(p < 0 for p in self.partitions):
            problems.append("partitions must be non-negative")
        if self.target_lsn is not None and not 0 <= self.target_lsn <= MAX_LSN:
            problems.append(f"target LSN {self.target_lsn} is outside 0..{MAX_LSN}")
        if self.epoch < 0:
            problems.append("epoch must be non-negative")
        if self.max_rows_per_file < 1:
            problems.append("max rows per file must be at least 1")
        problems.extend(self._base_problems())
        problems.extend(self._target_problems())
        return problems

    def _target_problems(self) -> list[str]:
        problems: list[str] = []
        for partition, target in sorted(self.targets.items()):
            if partition not in self.partitions:
                problems.append(f"target given for partition {partition}, which is not in the job")
            if not 0 <= target <= MAX_LSN:
                problems.append(f"partition {partition}'s target {target} is outside 0..{MAX_LSN}")
        return problems

    def _base_problems(self) -> list[str]:
        problems: list[str] = []
        for partition, prefix in sorted(self.bases.items()):
            if partition not in self.partitions:
                problems.append(f"base given for partition {partition}, which is not in the job")
                continue
            location = snapshot_location(prefix)
            if location is None or (location.stream, location.partition) != (
                self.stream,
                partition,
            ):
                problems.append(
                    f"base {prefix!r} for partition {partition} is not a snapshot prefix "
                    f"snapshots/{self.stream}/{partition}/{{lsn:020d}}-{{ulid}}/"
                )
        base = KIND_TABLE[self.kind].base if self.kind in KIND_TABLE else Base.OPTIONAL
        if base is Base.NONE and self.bases:
            problems.append(f"a {self.kind} starts from empty state: give no --base")
        if base is Base.REQUIRED:
            missing = [p for p in self.partitions if p not in self.bases]
            if missing:
                problems.append(
                    f"a {self.kind} needs a base snapshot for every partition; none for "
                    f"{_render_partitions(missing)} (use a bootstrap for those)"
                )
        return problems


class _OneLineArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage, so errors stay one readable line."""

    def error(self, message: str) -> NoReturn:
        raise JobArgumentError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineArgumentParser(
        prog="jobs.entrypoint",
        description="Bootstrap, restore or compact partitions of one snapledger stream.",
    )
    parser.add_argument("--kind", required=True, choices=JOB_KINDS)
    parser.add_argument("--root", required=True, help="s3://bucket[/prefix] or file:///dir")
    parser.add_argument("--stream", required=True)
    parser.add_argument(
        "--partitions", required=True, type=_partition_list, help="e.g. 0,1,2 or 0-7,9"
    )
    parser.add_argument(
        "--target-lsn",
        default=LATEST_AVAILABLE,
        type=_target_lsn,
        help=f"an LSN, or {LATEST_AVAILABLE} (default): each partition's end of changelog",
    )
    parser.add_argument(
        "--base",
        action="append",
        default=[],
        type=_base_entry,
        metavar="PARTITION=PREFIX|none",
        help="a partition's base snapshot prefix, relative to the root; repeat per partition",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        type=_target_entry,
        metavar="PARTITION=LSN",
        help="a partition's own target LSN (over --target-lsn); repeat per partition",
    )
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--epoch", type=int, default=0, help="writer epoch for the manifests")
    parser.add_argument("--max-rows-per-file", type=int, default=DEFAULT_MAX_ROWS_PER_FILE)
    return parser


def parse_job_args(argv: Sequence[str]) -> JobArgs:
    """Parse and check a command line; raises JobArgumentError with a one-line message."""
    namespace = build_parser().parse_args(list(argv))
    bases: dict[int, str] = {}
    for partition, prefix in namespace.base:
        if partition in bases:
            raise JobArgumentError(f"--base given twice for partition {partition}")
        if prefix is not None:
            bases[partition] = prefix
    targets: dict[int, int] = {}
    for partition, target in namespace.target:
        if partition in targets:
            raise JobArgumentError(f"--target given twice for partition {partition}")
        targets[partition] = target
    return JobArgs(
        kind=JobKind(namespace.kind),
        root=namespace.root,
        stream=namespace.stream,
        partitions=namespace.partitions,
        job_id=namespace.job_id,
        target_lsn=namespace.target_lsn,
        bases=bases,
        targets=targets,
        epoch=namespace.epoch,
        max_rows_per_file=namespace.max_rows_per_file,
    ).validate()


def _partition_list(text: str) -> tuple[int, ...]:
    partitions: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high or low)
            if last < first:
                raise ValueError(part)
            partitions.extend(range(first, last + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a partition list such as 0,1,2 or 0-7"
        ) from None
    return tuple(partitions)


def _target_lsn(text: str) -> int | None:
    if text == LATEST_AVAILABLE:
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is neither an LSN nor {LATEST_AVAILABLE}")
    return int(text)


def _target_entry(text: str) -> tuple[int, int]:
    partition, sep, lsn = text.partition("=")
    if not sep or not partition.strip().isdigit() or not lsn.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not PARTITION=LSN")
    return int(partition), int(lsn)


def _base_entry(text: str) -> tuple[int, str | None]:
    partition, sep, prefix = text.partition("=")
    if not sep or not partition.strip().isdigit() or not prefix.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not PARTITION=PREFIX or PARTITION=none")
    prefix = prefix.strip()
    if prefix == NO_BASE:
        return int(partition), None
    return int(partition), prefix if prefix.endswith("/") else prefix + "/"


def _render_partitions(partitions: Sequence[int]) -> str:
    return ", ".join(str(p) for p in partitions)
