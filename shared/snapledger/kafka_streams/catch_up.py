"""``kafka-seeder catch-up`` (kafka/seeder, Java) from Python: brings a task folder's store
to its changelog partition's end offset, reading the changelog alone. The jar is
``kafka/seeder/target/kafka-seeder.jar`` of a checkout (``make setup``) or the file
``SNAPLEDGER_KAFKA_SEEDER_JAR`` names (an init container or a snapshot job ships it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from snapledger.errors import SnapledgerError
from snapledger.kafka_streams.seed_format import TaskId, parse_task_id

DEFAULT_JAR = (
    Path(__file__).resolve().parents[3] / "kafka" / "seeder" / "target" / "kafka-seeder.jar"
)
#: How long one catch-up may read (the seeder's --timeout-ms; at most a day).
DEFAULT_TIMEOUT_S = 600.0
#: Tasks one catch-up takes (the seeder's --tasks bound, SeedOptions.MAX_TASKS).
MAX_TASKS = 10_000
#: The seeder's exit status for a refusal (its message says why).
REFUSED = 2
#: The seeder's JVM: a short-lived process, so only the quick JIT compiler (C1) and one GC
#: thread. A snapshot pass beside a busy application then costs about a third less CPU
#: (2.4 instead of 3.7-4.3 CPU seconds for 8 partitions of 30,000 new records each, the
#: same wall time; docs/kafka-streams.md, "What was measured").
SEEDER_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class CatchUpError(SnapledgerError):
    """The seeder could not run, or failed."""


class CatchUpRefusedError(CatchUpError):
    """The seeder refused (exit 2): e.g. the store is below the partition's log start."""


@dataclass(frozen=True)
class CatchUpResult:
    """What ``catch-up`` printed: the store's offset before and after (``None``: none),
    records applied (tombstones among them), and the partition's end and log start offsets
    as read at ``end_read_at`` (taken before the end offset was read)."""

    previous_offset: int | None
    offset: int | None
    applied: int
    tombstones: int
    end_offset: int
    log_start_offset: int
    end_read_at: datetime
    #: The input offsets the last record applied carries (``{"topic-partition": offset}``,
    #: the offset of the last input record the store reflects): its Kafka Streams position
    #: header, present when the application runs with the generation configuration
    #: (docs/kafka-streams.md, "Generations"); empty without it or with no record applied.
    input_offsets: dict[str, int] = field(default_factory=dict)


def seeder_jar() -> Path:
    jar = Path(os.environ.get("SNAPLEDGER_KAFKA_SEEDER_JAR") or DEFAULT_JAR)
    if not jar.is_file():
        raise CatchUpError(
            f"the Kafka Streams seeder is not at {jar}: run `make setup` in a checkout (or "
            "`mvn -f kafka/seeder/pom.xml package`), or set SNAPLEDGER_KAFKA_SEEDER_JAR"
        )
    return jar


def catch_up_tasks(
    state_dir: Path,
    application_id: str,
    tasks: Sequence[TaskId],
    store: str,
    bootstrap_servers: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[TaskId, CatchUpResult]:
    """Run ``catch-up --tasks`` on each task folder's store ``store``, one after the other in
    one seeder process (one JVM start for all); ``timeout_s`` bounds each task's read."""
    command = java_command(
        "catch-up",
        state_dir,
        application_id=application_id,
        tasks=tasks,
        store=store,
        bootstrap_servers=bootstrap_servers,
        timeout_s=timeout_s,
    )
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode == REFUSED:
        raise CatchUpRefusedError(done.stderr.strip())
    if done.returncode != 0:
        raise CatchUpError(
            f"kafka-seeder catch-up failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    return parse_results(done.stdout.splitlines(), tasks)


def parse_results(lines: Sequence[str], tasks: Sequence[TaskId]) -> dict[TaskId, CatchUpResult]:
    """The seeder's JSON lines of a catch-up of ``tasks``, one per task in their order."""
    parsed = [json.loads(line) for line in lines if line.startswith('{"task"')]
    results = {parse_task_id(fields["task"]): _result(fields) for fields in parsed}
    if list(results) != list(tasks):
        raise CatchUpError(
            f"kafka-seeder catch-up answered for {list(results)}, not {list(tasks)}: "
            f"{chr(10).join(lines)[-2000:]}"
        )
    return results


def java_command(action: str, state_dir: Path, **options: Any) -> list[str]:
    """The seeder's command line for ``catch-up`` or ``rewind`` over ``tasks`` (one JVM);
    ``options`` are ``seeder_arguments``'."""
    return [*java_launch(), *seeder_arguments(action, state_dir, **options)]


def java_launch() -> list[str]:
    """The seeder's JVM, up to its arguments."""
    java = shutil.which("java")
    if java is None:
        raise CatchUpError("the Kafka Streams seeder needs Java 17+ on PATH")
    return [java, *SEEDER_JVM_FLAGS, "-jar", str(seeder_jar())]


def seeder_arguments(
    action: str,
    state_dir: Path,
    *,
    application_id: str,
    tasks: Sequence[TaskId],
    store: str,
    bootstrap_servers: str,
    timeout_s: float,
) -> list[str]:
    """The seeder's arguments for ``catch-up`` or ``rewind`` over ``tasks``."""
    if not 1 <= len(tasks) <= MAX_TASKS or len(set(tasks)) != len(tasks):
        raise CatchUpError(f"{action} takes 1..{MAX_TASKS} distinct tasks, not {list(tasks)}")
    return [
        action,
        "--state-dir",
        str(state_dir),
        "--application-id",
        application_id,
        "--tasks",
        ",".join(str(task) for task in tasks),
        "--store",
        store,
        "--bootstrap-servers",
        bootstrap_servers,
        "--timeout-ms",
        str(int(timeout_s * 1000)),
    ]


def _result(fields: dict[str, Any]) -> CatchUpResult:
    return CatchUpResult(
        previous_offset=fields["previous_offset"],
        offset=fields["offset"],
        applied=fields["applied"],
        tombstones=fields["tombstones"],
        end_offset=fields["end_offset"],
        log_start_offset=fields["log_start_offset"],
        end_read_at=datetime.fromtimestamp(fields["end_read_at_ms"] / 1000, UTC),
        input_offsets={
            f"{topic}-{partition}": offset
            for topic, offsets in (fields.get("position") or {}).items()
            for partition, offset in offsets.items()
        },
    )
