"""Rewind a stopped Kafka Streams application to a COMPLETED generation of a store
(docs/kafka-streams.md, "Generations"): every task starts from its member snapshot and every
input partition is read again from the offset after the one the snapshot reflects.

Checked before anything changes, the registry's and the state directory's first (no Kafka
call until they pass): the generation is COMPLETED; each member names its input offsets (the
application ran with the generation configuration) and its manifest is in the store; each
member's task folder in ``state_dir`` is empty. Then Kafka's: the consumer group (the
application id) has no member; each member's changelog can still continue it (made from the
topic's current incarnation: the topic id its manifest names, if any, is the topic's; LSN + 1 at or
past the log start, and the horizon rule GC and the seed apply: made less than
``delete.retention.ms`` less its margin ago, ``core/changelog_horizon.py``; else tombstones
written after it may be gone and the tail would not say which keys to delete).
Last, its files download with the sizes and checksums registered (into a scratch folder
removed on a refusal, with the state directory's folders the rewind created). Then, in this
order, each step safe to run again:

1. ``kafka-seeder rewind`` (one JVM for every task) appends to each changelog partition a
   compensating record for every key whose value after the generation differs from the
   member's (its value, or a tombstone), carrying the generation's input position as Kafka
   Streams' own headers, and sets each scratch store's changelog offset to the partition's
   last record: the changelog's state is the generation's again, and the store restores
   nothing.
2. The group's committed offset of each input partition becomes the member's offset + 1.
3. Each task folder is renamed into ``{state_dir}/{application.id}/`` (the state directory's
   ``.lock`` held, as a seed holds it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from snapledger.client.control import Snapledger
from snapledger.client.errors import SnapshotCorruptError
from snapledger.client.reader import OpenedSnapshot, SnapshotReader
from snapledger.client.storage import BlobStore
from snapledger.clock import Clock, SystemClock
from snapledger.core.changelog_horizon import other_incarnation, past_horizon
from snapledger.errors import NotFoundError, SnapledgerError
from snapledger.kafka_streams.catch_up import DEFAULT_TIMEOUT_S, REFUSED, java_command
from snapledger.kafka_streams.changelog import (
    DEFAULT_BROKER_TIMEOUT_S,
    BrokerUnreachableError,
    Changelog,
    confluent_kafka,
    describe_changelog,
    kafka_config,
    kafka_failure,
    store_stream,
)
from snapledger.kafka_streams.seed import locked_app_dir, make_app_dir
from snapledger.kafka_streams.seed_format import TaskId, task_folder

#: Consumer group states with no member: offsets may be changed.
_IDLE_GROUP_STATES = {"EMPTY", "DEAD", "UNKNOWN"}


class GenerationRewindError(SnapledgerError):
    """The rewind was refused (before anything changed) or a step failed (run it again)."""


@dataclass(frozen=True)
class RewoundTask:
    """One task: its member snapshot, the input offsets the group now starts from, and the
    compensating records appended to its changelog partition."""

    task: str
    snapshot_id: str
    lsn: int
    input_offsets: dict[str, int]
    puts: int
    tombstones: int
    store_offset: int


@dataclass(frozen=True)
class _Member:
    task: TaskId
    snapshot_id: str
    lsn: int
    inputs: dict[tuple[str, int], int]
    opened: OpenedSnapshot  # its manifest, read (and checked) from the store


@dataclass(frozen=True)
class GenerationRewind:
    """Rewinds ``application_id``'s store ``store`` to a generation, ``group`` being the
    application's consumer group (its application id)."""

    registry: Snapledger
    root: str | BlobStore
    bootstrap_servers: str
    application_id: str
    store: str
    subtopology: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    broker_timeout_s: float = DEFAULT_BROKER_TIMEOUT_S
    clock: Clock = field(default_factory=SystemClock)

    @property
    def stream(self) -> str:
        return store_stream(self.application_id, self.store)

    def rewind(self, state_dir: Path, generation: int | None = None) -> list[RewoundTask]:
        """Rewind to ``generation`` (None: the newest) into the empty ``state_dir``."""
        found = self._completed(generation)
        opened = [self._member(m, found["generation"]) for m in found["members"]]
        app_dir = task_folder(state_dir, self.application_id, TaskId(0, 0)).parent
        self._check_empty(app_dir, [member for member, _ in opened])
        changelog = describe_changelog(
            self.bootstrap_servers, self.stream, timeout_s=self.broker_timeout_s
        )
        self._check_group_idle()
        for member, made in opened:
            self._check_continues(member, made, changelog)
        members = [member for member, _ in opened]
        with _made(app_dir), locked_app_dir(app_dir):
            self._check_empty(app_dir, members)  # again, the lock held
            scratch = Path(tempfile.mkdtemp(prefix=".rewind-", dir=app_dir))
            try:
                return self._apply(app_dir, scratch, members)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

    # -- checks (nothing changes) --------------------------------------------------------

    def _completed(self, generation: int | None) -> dict[str, Any]:
        found: dict[str, Any] = self.registry.generation(self.stream, generation)["generation"]
        if found["status"] != "COMPLETED":
            raise GenerationRewindError(
                f"generation {found['generation']} of {self.stream} is {found['status']} "
                f"(missing partitions {found['missing']}): only a COMPLETED generation can be "
                "rewound to; snapshot the missing partitions, or choose a completed one"
            )
        return found

    @staticmethod
    def _check_empty(app_dir: Path, members: Sequence[_Member]) -> None:
        for member in members:
            target = app_dir / str(member.task)
            if target.exists() and any(target.iterdir()):
                raise GenerationRewindError(
                    f"{target} is not empty: rewind into a state directory without the "
                    "generation's task folders (delete the instance's state first)"
                )

    def _check_group_idle(self) -> None:
        kafka = confluent_kafka()
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(kafka_config(self.bootstrap_servers))
        group = self.application_id
        timeout = self.broker_timeout_s
        try:
            described = admin.describe_consumer_groups([group], request_timeout=timeout)[
                group
            ].result(timeout=timeout)
        except (kafka.KafkaException, TimeoutError) as exc:
            failure = kafka_failure(
                exc, self.bootstrap_servers, timeout, f"describing consumer group {group!r}"
            )
            if isinstance(failure, BrokerUnreachableError):
                raise failure from exc
            raise GenerationRewindError(str(failure)) from exc
        state = getattr(described.state, "name", str(described.state))
        if described.members or state not in _IDLE_GROUP_STATES:
            raise GenerationRewindError(
                f"consumer group {group!r} is {state} with {len(described.members)} member(s): "
                "stop every instance of the application before rewinding it"
            )

    def _member(self, member: dict[str, Any], generation: int) -> tuple[_Member, datetime | None]:
        """The member with its input offsets, and when its snapshot was made (its manifest's
        ``created_at``), read from the store: refused when either is missing."""
        partition, snapshot_id, lsn = member["partition"], member["snapshot_id"], member["lsn"]
        where = f"generation {generation}, partition {partition}: snapshot {snapshot_id}"
        own = f"{self.stream}-{partition}"
        inputs = {}
        for name, offset in (member.get("offsets") or {}).items():
            if name != own:
                topic, _, number = name.rpartition("-")
                inputs[(topic, int(number))] = int(offset)
        if not inputs:
            raise GenerationRewindError(
                f"{where} names no input offsets: its changelog records carried no position; "
                "run the application with the generation configuration "
                "(__iq.consistency.offset.vector.enabled__=true, statestore.cache.max.bytes=0) "
                "and request a new generation"
            )
        record = self.registry.snapshot(self.stream, partition, snapshot_id)["snapshot"]
        try:
            opened = SnapshotReader(self.root).open(record["manifest_key"])
        except (SnapshotCorruptError, NotFoundError) as exc:
            raise GenerationRewindError(
                f"{where} cannot be read ({exc}): nothing was changed; request a new generation"
            ) from exc
        made = getattr(opened.descriptor, "created_at", None)
        found = _Member(TaskId(self.subtopology, partition), snapshot_id, lsn, inputs, opened)
        return found, made

    def _check_continues(
        self, member: _Member, made: datetime | None, changelog: Changelog
    ) -> None:
        partition, lsn = member.task.partition, member.lsn
        where = f"partition {partition}: snapshot {member.snapshot_id}"
        named = getattr(getattr(member.opened.descriptor, "changelog", None), "topic_id", None)
        other = other_incarnation(changelog.topic, named, changelog.topic_id)
        if other is not None:
            raise GenerationRewindError(
                f"{where} was {other}: the changelog cannot be made to agree with it; request "
                "a new generation"
            )
        offsets = changelog.partitions.get(partition)
        if offsets is None or lsn + 1 < offsets.log_start:
            raise GenerationRewindError(
                f"{where} at {lsn}: the changelog no longer continues it (log start "
                f"{offsets.log_start if offsets else 'none'})"
            )
        if not isinstance(made, datetime):
            raise GenerationRewindError(
                f"{where}: its manifest states no created_at, so whether compaction has "
                "dropped tombstones written after it is unknown; request a new generation"
            )
        too_old = past_horizon(made, self.clock.now(), changelog.delete_retention_ms)
        if too_old is not None:
            raise GenerationRewindError(
                f"{where} was {too_old}; the changelog cannot be made to agree with it: "
                "request a new generation"
            )

    # -- changes ---------------------------------------------------------------------------

    def _apply(self, app_dir: Path, scratch: Path, members: Sequence[_Member]) -> list[RewoundTask]:
        for member in members:  # downloads (and checks) every member before any change
            store_dir = scratch / self.application_id / str(member.task) / "rocksdb" / self.store
            try:
                member.opened.download(store_dir)
            except (SnapshotCorruptError, NotFoundError) as exc:
                raise GenerationRewindError(
                    f"partition {member.task.partition}: snapshot {member.snapshot_id} is "
                    f"damaged or gone ({exc}): nothing was changed; request a new generation"
                ) from exc
        outcomes = self._compensate(scratch, members)
        self._reset_group(members)
        rewound = []
        for member in members:
            os.rename(scratch / self.application_id / str(member.task), app_dir / str(member.task))
            done = outcomes[str(member.task)]
            rewound.append(
                RewoundTask(
                    str(member.task),
                    member.snapshot_id,
                    member.lsn,
                    {f"{t}-{p}": o + 1 for (t, p), o in sorted(member.inputs.items())},
                    done["puts"],
                    done["tombstones"],
                    done["offset"],
                )
            )
        return rewound

    def _compensate(self, scratch: Path, members: Sequence[_Member]) -> dict[str, dict[str, Any]]:
        command = java_command(
            "rewind",
            scratch,
            application_id=self.application_id,
            tasks=[m.task for m in members],
            store=self.store,
            bootstrap_servers=self.bootstrap_servers,
            timeout_s=self.timeout_s,
        )
        lines = "".join(
            f"{m.task} " + ",".join(f"{t}:{p}:{o}" for (t, p), o in sorted(m.inputs.items())) + "\n"
            for m in members
        )
        done = subprocess.run(command, input=lines, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            what = "refused" if done.returncode == REFUSED else "failed"
            raise GenerationRewindError(
                f"kafka-seeder rewind {what} ({done.returncode}): {done.stderr[-2000:]}; the "
                "consumer group's offsets were not changed; run the rewind again"
            )
        return {
            fields["task"]: fields
            for fields in (json.loads(x) for x in done.stdout.splitlines() if x.startswith("{"))
        }

    def _reset_group(self, members: Sequence[_Member]) -> None:
        kafka = confluent_kafka()
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(kafka_config(self.bootstrap_servers))
        partitions = [
            kafka.TopicPartition(topic, number, offset + 1)
            for m in members
            for (topic, number), offset in sorted(m.inputs.items())
        ]
        request = ConsumerGroupTopicPartitions(self.application_id, partitions)
        timeout = self.broker_timeout_s
        try:
            admin.alter_consumer_group_offsets([request], request_timeout=timeout)[
                self.application_id
            ].result(timeout=timeout)
        except (kafka.KafkaException, TimeoutError) as exc:
            failure = kafka_failure(exc, self.bootstrap_servers, timeout, "resetting the offsets")
            raise GenerationRewindError(
                f"resetting consumer group {self.application_id!r} failed ({failure}): the "
                "changelogs already agree with the generation; run the rewind again"
            ) from exc


@contextmanager
def _made(app_dir: Path) -> Iterator[Path]:
    """``app_dir``, created with its missing parents; when the body raises, the folders it
    created are removed again (the lock file with them): a refused or failed rewind leaves no
    folder behind in a state directory that had none."""
    created = [p for p in (app_dir, *app_dir.parents) if not p.exists()]  # innermost first
    make_app_dir(app_dir)
    try:
        yield app_dir
    except BaseException:
        if created:
            (app_dir / ".lock").unlink(missing_ok=True)
            for folder in created:
                with suppress(OSError):  # not empty: something of value is in it; kept
                    folder.rmdir()
        raise
