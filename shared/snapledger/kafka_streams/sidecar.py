"""The snapshot sidecar: a Kafka Streams store's partitions snapshotted on a schedule while
the application runs (``snapledger kafka-streams snapshot --every-records N
--every-seconds T``; docs/kafka-streams.md, "Snapshots on a schedule").

It starts from each partition's latest REGISTERED snapshot in the ledger (a restart does not
snapshot everything again; a changelog not created yet is looked for again every poll, so
the sidecar may start before the application), then every ``poll_seconds`` reads the
changelog's end offsets (one ListOffsets call for all partitions), asks the schedule
(``schedule.py``) which partitions are due and snapshots those with ``StoreSnapshotter``
(one seeder process for the batch). A failed batch is run again partition by partition, so
one failing partition does not hold back the others; a failed partition is logged and
retried, alone, at the next poll. A latest snapshot of another incarnation of the topic (it
was deleted and recreated) counts as none; an end offset below what a partition's last snapshot
covers (the topic recreated while the sidecar runs: its offsets restarted), or end offsets that
cannot be read, make the next poll read the topic and the ledger again.
Each partition's caught-up store is kept between passes (``working_copy.py``), so a pass
continues what the last one wrote instead of downloading it: under ``work_dir/working-copies``
(kept across restarts, checked before use), or without a ``work_dir`` in a temporary folder
removed when ``run`` returns; and one resident seeder process (``resident_seeder.py``)
catches the stores up at every pass, ended when ``run`` returns (``close``).
SIGTERM or SIGINT lets the run in flight finish (its snapshots written, manifest last, and
delivered), starts no other, and returns.
"""

from __future__ import annotations

import logging
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from snapledger.core.changelog_horizon import other_incarnation
from snapledger.errors import InvalidRequestError
from snapledger.kafka_streams.changelog import (
    Changelog,
    ChangelogError,
    changelog_admin,
    check_partition,
    describe_changelog,
    end_offsets,
)
from snapledger.kafka_streams.resident_seeder import ResidentSeeder
from snapledger.kafka_streams.schedule import (
    DEFAULT_POLL_SECONDS,
    PartitionMark,
    SnapshotSchedule,
    check_poll_seconds,
)
from snapledger.kafka_streams.snapshotter import PartitionSnapshot, StoreSnapshotter
from snapledger.kafka_streams.working_copy import kept_under

log = logging.getLogger(__name__)

#: The longest the loop sleeps before it looks at the stop flag again.
_STOP_CHECK_S = 0.1


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class PollResult:
    """What one poll did: the partitions due, the snapshot runs made, the partitions whose
    run failed (partition -> error; retried at the next poll) and whether the end offsets
    could not be read (``error``: nothing was snapshotted)."""

    due: list[int] = field(default_factory=list)
    made: list[PartitionSnapshot] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    error: str | None = None


class SnapshotSidecar:
    """Snapshots of ``snapshotter``'s store on ``schedule``; ``partitions`` limits it (None:
    every partition of the changelog at start). ``on_snapshot`` gets each partition's run;
    ``clock`` gives the time (UTC)."""

    def __init__(
        self,
        snapshotter: StoreSnapshotter,
        schedule: SnapshotSchedule,
        *,
        partitions: Iterable[int] | None = None,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        work_dir: Path | None = None,
        on_snapshot: Callable[[PartitionSnapshot], object] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.snapshotter = snapshotter
        if snapshotter.keep_dir is None and work_dir is not None:
            self.snapshotter = replace(self.snapshotter, keep_dir=kept_under(work_dir))
        self._resident: ResidentSeeder | None = None
        if snapshotter.seeder is None:
            self._resident = ResidentSeeder()
            self.snapshotter = replace(self.snapshotter, seeder=self._resident)
        self._temporary: Path | None = None
        self.schedule = schedule
        self.poll_seconds = check_poll_seconds(poll_seconds)
        self.work_dir = work_dir
        self.on_snapshot = on_snapshot
        self.clock = clock
        self._wanted = (
            None if partitions is None else sorted({check_partition(p) for p in partitions})
        )
        self.marks: dict[int, PartitionMark] = {}
        self.failing: set[int] = set()
        self._admin: Any = None
        self._stopping = False

    def start(self) -> None:
        """Read the changelog's partitions and each one's latest registered snapshot."""
        snap = self.snapshotter
        changelog = describe_changelog(
            snap.bootstrap_servers, snap.stream, timeout_s=snap.broker_timeout_s
        )
        partitions = list(changelog.partitions) if self._wanted is None else self._wanted
        missing = [p for p in partitions if p not in changelog.partitions]
        if missing:
            raise InvalidRequestError(
                f"partitions {missing}: {changelog.topic} has {len(changelog.partitions)} "
                "partitions; give partitions it has"
            )
        started = self.clock()
        self.marks = {
            p: self._mark_from_ledger(p, changelog.partitions[p].log_start, started, changelog)
            for p in partitions
        }
        self._admin = changelog_admin(snap.bootstrap_servers)

    def _mark_from_ledger(
        self, partition: int, log_start: int, started: datetime, changelog: Changelog
    ) -> PartitionMark:
        latest = self.snapshotter.latest(partition)
        if latest is None:
            return PartitionMark(partition, covered_to=log_start, since=started)
        snapshot_id, lsn = latest
        record = self.snapshotter.registry.snapshot(self.snapshotter.stream, partition, snapshot_id)
        fields = record["snapshot"]
        named = (fields.get("changelog") or {}).get("topic_id")
        if other_incarnation(changelog.topic, named, changelog.topic_id) is not None:
            return PartitionMark(partition, covered_to=log_start, since=started)
        made_at = (fields.get("changelog") or {}).get("read_at") or fields["registered_at"]
        return PartitionMark(partition, lsn + 1, datetime.fromisoformat(made_at), lsn)

    def poll_once(self) -> PollResult:
        """Read the end offsets once and snapshot the partitions due."""
        if self._admin is None:
            self.start()
        if self.snapshotter.keep_dir is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="snapledger-kept-"))
            self.snapshotter = replace(self.snapshotter, keep_dir=self._temporary)
        now = self.clock()
        snap = self.snapshotter
        try:
            ends = end_offsets(
                self._admin,
                snap.stream,
                self.marks,
                timeout_s=snap.broker_timeout_s,
                bootstrap_servers=snap.bootstrap_servers,
            )
        except Exception as exc:  # the broker may be back, or the topic recreated, next poll
            log.error(
                "reading %s's end offsets failed (the topic and the ledger read again next "
                "poll): %s",
                snap.stream,
                exc,
            )
            self._admin = None
            return PollResult(error=str(exc))
        behind = sorted(p for p, end in ends.items() if end < self.marks[p].covered_to)
        if behind:
            log.warning(
                "%s partitions %s: end offsets below what their last snapshots cover: the "
                "topic was recreated (its offsets restarted); reading it and the ledger again",
                snap.stream,
                behind,
            )
            self._admin = None
            return PollResult()
        due = self.schedule.due(self.marks, ends, now)
        batch = [p for p in due if p not in self.failing]
        groups = ([batch] if batch else []) + [[p] for p in due if p in self.failing]
        result = PollResult(due=due)
        while groups and not self._stopping:
            group = groups.pop(0)
            try:
                made = snap.snapshot(group, work_dir=self.work_dir)
            except Exception as exc:
                if len(group) > 1:  # find the failing ones: the others go on without them
                    groups[:0] = [[p] for p in group]
                    continue
                log.error("partition %s: snapshot failed (retried next poll): %s", group[0], exc)
                self.failing.add(group[0])
                result.failed[group[0]] = str(exc)
                continue
            for run in made:
                self._done(run, now)
                result.made.append(run)
        return result

    def _done(self, run: PartitionSnapshot, poll_started: datetime) -> None:
        self.failing.discard(run.partition)
        mark = self.marks[run.partition]
        if run.written is not None:
            # Timed from the poll, not from each partition's own read (seconds apart in one
            # pass): the partitions of a pass fall due again together, at one next pass and
            # one seeder JVM start, and none waits longer than every_seconds.
            self.marks[run.partition] = mark.snapshotted(run.written.lsn, poll_started)
        else:
            self.marks[run.partition] = mark.nothing_new_below(run.catch_up.end_offset)
        if self.on_snapshot is not None:
            self.on_snapshot(run)

    def close(self) -> None:
        """End the resident seeder it started and remove the temporary working copies
        (``run`` does, when it returns)."""
        if self._resident is not None:
            self._resident.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self.snapshotter = replace(self.snapshotter, keep_dir=None)
            self._temporary = None

    def stop(self) -> None:
        """Finish the run in flight, start no other: ``run`` then returns."""
        self._stopping = True

    def run(self) -> None:
        """Poll until ``stop`` (SIGTERM or SIGINT when called on the main thread)."""
        handled = threading.current_thread() is threading.main_thread()
        previous = {}
        if handled:
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, self._on_signal)
        try:
            while not self._stopping:
                if self._admin is not None or self._started():
                    self.poll_once()
                deadline = time.monotonic() + self.poll_seconds
                while not self._stopping and time.monotonic() < deadline:
                    time.sleep(min(_STOP_CHECK_S, max(0.0, deadline - time.monotonic())))
        finally:
            log.info("the snapshot sidecar of %s stopped", self.snapshotter.stream)
            self.close()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _started(self) -> bool:
        """``start``; False when the changelog cannot be read yet (the application has not
        created it, or the brokers are unreachable): logged, tried again at the next poll."""
        try:
            self.start()
        except ChangelogError as exc:
            log.error("waiting for the changelog (looked for again next poll): %s", exc)
            return False
        return True

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        # Only a flag: the handler runs between two bytecodes of the main thread, which may
        # hold any lock at that moment.
        self.stop()
