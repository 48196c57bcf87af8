"""Booting a partition of the checkpointer's table: its newest registered checkpoint that
the topic can still continue and that passes its check, or the topic's beginning."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from examples.ktable_checkpointer.table import KTableCheckpointerError, PartitionTable
from snapledger.client import (
    RequestRefusedError,
    Snapledger,
    SnapshotCorruptError,
    SnapshotReader,
)

#: How many of a partition's newest snapshot records ``boot`` looks at, newest first, before
#: it reads the partition from its beginning.
CANDIDATES = 5
#: The prefix of the reasons that rule out every older checkpoint too.
CANNOT_CONTINUE = "the topic can no longer continue it"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Boot:
    """Where a partition started: a checkpoint (its id and LSN) or the topic's beginning
    (``lsn`` None), and why (``reason``: the checkpoints skipped, if any); ``epoch``: the
    epoch its checkpoints are written with."""

    partition: int
    snapshot_id: str | None
    lsn: int | None
    reason: str
    epoch: int


@dataclass(frozen=True)
class CheckpointLoader:
    """Finds and loads a partition's checkpoint of ``topic`` (stream ``stream``)."""

    registry: Snapledger
    reader: SnapshotReader
    topic: str
    stream: str

    def boot(
        self, table: PartitionTable, *, epoch: int, log_start: int, retention_ms: int | None
    ) -> Boot:
        """Load the partition's newest usable registered checkpoint into ``table``.

        ``log_start``: the partition's log start offset; ``retention_ms``: the topic's
        ``delete.retention.ms``. The epoch is raised to the lineage's highest seen, so a
        restarted checkpointer is not fenced."""
        partition = table.partition
        try:
            head = self.registry.latest(self.stream, partition)["head"]
        except RequestRefusedError as exc:
            if exc.answer.get("error") != "not_found":
                raise
            return Boot(partition, None, None, "from the beginning: no checkpoint yet", epoch)
        epoch = max(epoch, int(head.get("max_epoch") or 0))
        records = self.registry.snapshots(self.stream, partition, limit=CANDIDATES)["snapshots"]
        skipped: list[str] = []
        for record in records:
            if record.get("status") != "REGISTERED":
                continue
            problem = self._unusable(record, log_start)
            if problem is None:
                problem = self._load(table, record, retention_ms)
            if problem is None:
                reason = "; ".join(skipped) or "the latest registered checkpoint"
                return Boot(partition, record["snapshot_id"], record["lsn"], reason, epoch)
            skipped.append(f"{record['snapshot_id']}: {problem}")
            _log.warning("%s/%s: checkpoint skipped: %s", self.stream, partition, skipped[-1])
            if problem.startswith(CANNOT_CONTINUE):
                break  # an older one cannot be continued either
        reason = "; ".join(skipped) or "no registered checkpoint"
        return Boot(partition, None, None, f"from the beginning: {reason}", epoch)

    def _unusable(self, record: Mapping[str, Any], log_start: int) -> str | None:
        """Why this record is not a checkpoint the topic can continue, or None."""
        key = f"{self.topic}-{record.get('partition')}"
        offsets = record.get("offsets") or {}
        if record.get("format") != "kv-parquet" or offsets.get(key) != record["lsn"] + 1:
            return f"not a checkpoint of {key} (offsets {offsets}, format {record.get('format')})"
        if offsets[key] < log_start:
            return (
                f"{CANNOT_CONTINUE}: its offset {offsets[key]} is below the partition's "
                f"log start {log_start}"
            )
        return None

    def _load(
        self, table: PartitionTable, record: Mapping[str, Any], retention_ms: int | None
    ) -> str | None:
        """Load the checkpoint's rows into ``table``; why it cannot be, or None."""
        try:
            opened = self.reader.open(record["manifest_key"])
            opened.verify()
            rows = opened.to_arrow()
        except SnapshotCorruptError as exc:
            return f"failed its check: {exc}"
        created = opened.descriptor.created_at
        if created is not None and retention_ms is not None:
            age = datetime.now(UTC) - created
            if age > timedelta(milliseconds=retention_ms):
                return (
                    f"{CANNOT_CONTINUE}: it is {age} old, past the topic's "
                    f"delete.retention.ms ({retention_ms} ms), so compaction may have "
                    "dropped tombstones written after it"
                )
        triples = zip(
            rows["key"].to_pylist(), rows["value"].to_pylist(), rows["lsn"].to_pylist(), strict=True
        )
        table.load(triples, int(record["lsn"]))
        return None


def delete_retention_ms(bootstrap_servers: str, topic: str) -> int | None:
    """The topic's ``delete.retention.ms`` (how long compaction keeps a tombstone), or
    None if the broker does not say."""
    from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    resource = ConfigResource("topic", topic)
    try:
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
    except Exception as exc:
        raise KTableCheckpointerError(
            f"reading {topic!r}'s configuration on {bootstrap_servers} failed: {exc}"
        ) from exc
    entry = configs.get("delete.retention.ms")
    return None if entry is None or entry.value is None else int(entry.value)
