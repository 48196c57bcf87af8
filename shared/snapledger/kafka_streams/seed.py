"""Boot: put each task's newest usable snapshot into an empty Kafka Streams state directory
before the application starts (docs/kafka-streams.md, "Boot"), so it restores only the
changelog after the snapshot's offset.

For each task ``{subtopology}_{partition}``: a non-empty task folder is left as it is. Else
the lineage's registered snapshots are tried newest first; one is usable only if (a) it was
made from the topic's current incarnation (the topic id its manifest names, if any, is the
topic's), (b) its LSN is at or past the changelog partition's log start and below its log
end, (c) the changelog can still continue it by age: the horizon rule GC applies too (made
less than ``delete.retention.ms`` less its margin ago: ``core/changelog_horizon.py``), and
(d) its files download with the sizes and checksums registered. The first usable one is
downloaded into a staging folder in ``{state.dir}/{application.id}/`` and renamed to the task
folder; none usable: the folder stays empty and the task restores from the changelog (slower, never
wrong). ``{state.dir}/{application.id}/.lock`` is held meanwhile, as a running instance
holds it, so a seed never runs beside one. A changelog topic that does not exist yet (the
application's very first start) leaves nothing to seed: each task is told so (outcome
``no-changelog``; task ``all`` when none was named) and the application starts as without
snapledger.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from snapledger.client.control import Snapledger
from snapledger.client.errors import SnapshotCorruptError
from snapledger.client.opened_snapshot import OpenedSnapshot
from snapledger.client.reader import SnapshotReader
from snapledger.client.storage import BlobStore
from snapledger.clock import Clock, SystemClock
from snapledger.core.changelog_horizon import other_incarnation, past_horizon
from snapledger.errors import InvalidRequestError, NotFoundError, SnapledgerError
from snapledger.kafka_streams.changelog import (
    DEFAULT_BROKER_TIMEOUT_S,
    Changelog,
    ChangelogMissingError,
    check_partition,
    describe_changelog,
    store_stream,
)
from snapledger.kafka_streams.seed_format import TaskId, task_folder

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: Snapshots tried per task, newest first (1..MAX_CANDIDATES).
DEFAULT_CANDIDATES, MAX_CANDIDATES = 10, 100
#: Records asked per listing page (the query's default page), and the most pages read past
#: records of other statuses before the task restores from its changelog instead.
LISTING_PAGE, MAX_LISTING_PAGES = 100, 10


class SeedError(SnapledgerError):
    """A task folder could not be written (the state directory is in use, or not empty)."""


@dataclass(frozen=True)
class Skipped:
    snapshot_id: str
    lsn: int
    reason: str


#: The task of a ``no-changelog`` outcome when no task was named: every task of the store.
EVERY_TASK = "all"


@dataclass(frozen=True)
class TaskSeed:
    """One task's outcome: ``seeded`` (from ``snapshot_id`` at ``lsn``), ``kept`` (its
    folder was not empty), ``changelog`` (no usable snapshot: it restores from the topic) or
    ``no-changelog`` (the topic does not exist yet: nothing to seed)."""

    task: str
    outcome: Literal["seeded", "kept", "changelog", "no-changelog"]
    snapshot_id: str | None = None
    lsn: int | None = None
    skipped: tuple[Skipped, ...] = field(default=())


@dataclass(frozen=True)
class StoreSeeder:
    """Seeds store ``store`` of ``application_id``'s tasks in ``state_dir`` from ``root``."""

    registry: Snapledger
    root: str | BlobStore
    bootstrap_servers: str
    application_id: str
    store: str
    candidates: int = DEFAULT_CANDIDATES
    s3_client: S3Client | None = None
    broker_timeout_s: float = DEFAULT_BROKER_TIMEOUT_S
    clock: Clock = field(default_factory=SystemClock)

    def seed(
        self, state_dir: Path, tasks: Sequence[TaskId] | None = None, *, subtopology: int = 0
    ) -> list[TaskSeed]:
        """Seed ``tasks`` (None: ``{subtopology}_{p}`` for every changelog partition p)."""
        if not 1 <= self.candidates <= MAX_CANDIDATES:
            raise InvalidRequestError(f"candidates {self.candidates}: give 1..{MAX_CANDIDATES}")
        stream = store_stream(self.application_id, self.store)
        app_dir = make_app_dir(task_folder(state_dir, self.application_id, TaskId(0, 0)).parent)
        try:
            changelog = describe_changelog(
                self.bootstrap_servers, stream, timeout_s=self.broker_timeout_s
            )
        except ChangelogMissingError:
            return _before_first_start(app_dir, tasks)
        if tasks is None:
            tasks = [TaskId(subtopology, p) for p in sorted(changelog.partitions)]
        with locked_app_dir(app_dir):
            return [self._seed_task(app_dir, task, changelog) for task in tasks]

    def _seed_task(self, app_dir: Path, task: TaskId, changelog: Changelog) -> TaskSeed:
        target = app_dir / str(task)
        if target.exists() and any(target.iterdir()):
            return TaskSeed(str(task), "kept")
        partition = changelog.partitions.get(check_partition(task.partition))
        if partition is None:
            raise InvalidRequestError(
                f"task {task}: {changelog.topic} has no partition {task.partition} "
                f"(it has {len(changelog.partitions)})"
            )
        records, skipped = self._registered(changelog, task.partition)
        reader = SnapshotReader(self.root, s3_client=self.s3_client)
        for record in records:
            snapshot_id, lsn = record["snapshot_id"], int(record["lsn"])
            if lsn + 1 < partition.log_start:
                skipped.append(
                    Skipped(snapshot_id, lsn, f"below the log start {partition.log_start}")
                )
                continue
            if lsn >= partition.log_end:
                skipped.append(
                    Skipped(snapshot_id, lsn, f"at or past the log end {partition.log_end}")
                )
                continue
            try:
                opened = reader.open(record["manifest_key"])
                made = _created_at(opened)
                too_old = past_horizon(made, self.clock.now(), changelog.delete_retention_ms)
                if too_old is not None:
                    skipped.append(Skipped(snapshot_id, lsn, too_old))
                    continue
                self._place(app_dir, target, task, opened)
            except SnapshotCorruptError as exc:
                skipped.append(Skipped(snapshot_id, lsn, f"damaged: {exc}"))
                continue
            except NotFoundError as exc:  # collected since it was listed
                skipped.append(Skipped(snapshot_id, lsn, f"gone: {exc}"))
                continue
            return TaskSeed(str(task), "seeded", snapshot_id, lsn, tuple(skipped))
        return TaskSeed(str(task), "changelog", skipped=tuple(skipped))

    def _registered(
        self, changelog: Changelog, partition: int
    ) -> tuple[list[dict[str, Any]], list[Skipped]]:
        """The ``candidates`` newest REGISTERED records of the topic's current incarnation,
        highest LSN first, and those of another incarnation met on the way (skipped: after
        the topic was recreated, the old topic's higher LSNs list first). The listing is
        paged past records of other statuses (REJECTED, EXPIRING, DELETED) and of other
        incarnations, at most ``MAX_LISTING_PAGES`` pages."""
        found: list[dict[str, Any]] = []
        others: list[Skipped] = []
        cursor: str | None = None
        for _ in range(MAX_LISTING_PAGES):
            answer = self.registry.snapshots(
                changelog.topic, partition, limit=LISTING_PAGE, cursor=cursor
            )
            for record in answer.get("snapshots", []):
                if record.get("status") != "REGISTERED":
                    continue
                named = (record.get("changelog") or {}).get("topic_id")
                other = other_incarnation(changelog.topic, named, changelog.topic_id)
                if other is None:
                    found.append(record)
                else:
                    others.append(Skipped(record["snapshot_id"], int(record["lsn"]), other))
            cursor = answer.get("cursor")
            if len(found) >= self.candidates or not cursor:
                break
        found.sort(key=lambda r: int(r["lsn"]), reverse=True)
        return found[: self.candidates], others

    def _place(self, app_dir: Path, target: Path, task: TaskId, opened: OpenedSnapshot) -> None:
        staging = app_dir / f".seeding-{task}-{uuid.uuid4().hex}"
        try:
            opened.download(staging / "rocksdb" / self.store)
            if target.exists():
                if any(target.iterdir()):
                    raise SeedError(f"refusing to seed {target}: it is no longer empty")
                target.rmdir()
            os.rename(staging, target)
            _fsync_dir(app_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _before_first_start(app_dir: Path, tasks: Sequence[TaskId] | None) -> list[TaskSeed]:
    """No changelog yet: nothing to seed, said per task (or once for every task). The state
    directory's lock is still taken: a seed beside a running instance is refused alike."""
    with locked_app_dir(app_dir):
        named = [EVERY_TASK] if tasks is None else [str(task) for task in tasks]
        return [TaskSeed(task, "no-changelog") for task in named]


def make_app_dir(app_dir: Path) -> Path:
    """``{state.dir}/{application.id}``, created with its missing parents; a path that cannot
    be that folder (a file is in the way, no permission) is a bad ``--state-dir``."""
    try:
        app_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise InvalidRequestError(
            f"{app_dir} is a file, not a folder: Kafka Streams keeps the application's task "
            "folders there; move the file away, or give another --state-dir"
        ) from exc
    except OSError as exc:
        raise InvalidRequestError(
            f"cannot make the folder {app_dir}: {exc.strerror or exc}; give a --state-dir "
            "this user can write, with no file in the way"
        ) from exc
    return app_dir


def _created_at(opened: OpenedSnapshot) -> datetime:
    made = getattr(opened.descriptor, "created_at", None)
    if not isinstance(made, datetime):
        raise SnapshotCorruptError(
            opened.prefix, detail="its manifest states no created_at: its age is unknown"
        )
    return made if made.tzinfo is not None else made.replace(tzinfo=UTC)


@contextmanager
def locked_app_dir(app_dir: Path) -> Iterator[None]:
    """Hold ``{app_dir}/.lock`` as Kafka Streams' StateDirectory does (an fcntl lock: the
    JVM's FileChannel.tryLock on Linux), or refuse."""
    try:
        opened = (app_dir / ".lock").open("a")
    except OSError as exc:
        raise InvalidRequestError(
            f"cannot open {app_dir / '.lock'}: {exc.strerror or exc}; give a --state-dir this "
            "user can write"
        ) from exc
    with opened as lock:
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise SeedError(
                f"{app_dir / '.lock'} is locked: a Kafka Streams instance (or another seed) uses "
                "this state directory; seed before the application starts, one seed at a time"
            ) from exc
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
