"""The checkpointer's parts that need no broker and no registry: one partition's table, the
key encoding, the checkpoint schedule, and the bounds of every number the checkpointer takes
(docs/kafka-streams.md, "The KTable checkpointer")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from snapledger.errors import InvalidRequestError, SnapledgerError
from snapledger.layout import MAX_LSN

#: ``every_records``: checkpoint after at most this many records applied (1 .. 10,000,000).
MAX_EVERY_RECORDS = 10_000_000
#: ``every_seconds``: checkpoint a changed partition at least this often (1 s .. 1 day).
MIN_EVERY_SECONDS = 1.0
MAX_EVERY_SECONDS = 86_400.0
#: Two checkpoints are at least this far apart, whatever triggers them (``close`` aside):
#: a burst of records never writes more than one checkpoint per partition per second.
MIN_CHECKPOINT_INTERVAL_S = 1.0
#: ``retention_min_count``: the registry's own bound on ``min_count`` (models/policy.py).
MAX_RETENTION_MIN_COUNT = 50
#: ``retention_min_age_hours``: the registry's bound on durations (limits.MAX_HOURS).
MAX_RETENTION_MIN_AGE_HOURS = 876_000.0
#: ``epoch``: the registry's bound on an epoch (limits.MAX_EPOCH).
MAX_EPOCH = 2**63 - 1
#: A key longer than this (UTF-8 bytes) is refused: a key is a cell of a Parquet string
#: column, and a table keyed by megabyte keys is not what this example is for.
MAX_KEY_BYTES = 64 * 1024


class KTableCheckpointerError(SnapledgerError):
    """The checkpointer cannot go on: the message says what is wrong and what to do."""


class KeyEncodingError(KTableCheckpointerError):
    """A record's key is not UTF-8 text (kv-parquet keys are strings)."""


def checked_number(name: str, value: float, low: float, high: float) -> float:
    """``value`` if ``low <= value <= high`` (and a number), else a clear refusal."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidRequestError(
            f"{name} must be a number from {low:g} to {high:g}, got {value!r}: "
            "see docs/kafka-streams.md, 'The KTable checkpointer'"
        )
    return value


def decode_key(key: bytes | None, topic: str, partition: int, offset: int) -> str:
    """A Kafka key as the table's text key; refuses a null, over-long or non-UTF-8 key."""
    where = f"{topic}-{partition} at offset {offset}"
    if key is None:
        raise KeyEncodingError(
            f"{where} has a null key: a compacted topic's records need a key; "
            "produce every record with one"
        )
    if len(key) > MAX_KEY_BYTES:
        raise KeyEncodingError(
            f"{where} has a key of {len(key):,} bytes, above {MAX_KEY_BYTES:,}: "
            "shorten the topic's keys"
        )
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KeyEncodingError(
            f"{where} has a key that is not UTF-8 text ({key[:32]!r}, byte {exc.start} is "
            "invalid): the KTable checkpointer stores keys as text; produce UTF-8 keys (e.g. "
            "base64 or hex of binary keys) to a topic you checkpoint"
        ) from exc


@dataclass
class PartitionTable:
    """One partition's materialized table: key → (value, offset of the put that set it),
    and where the partition stands: its last applied offset (the LSN) and how many records
    were applied since its last checkpoint."""

    topic: str
    partition: int
    rows: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    last_applied: int | None = None  # the LSN: offset of the last record applied
    applied_since_checkpoint: int = 0

    @property
    def next_offset(self) -> int:
        """The next offset to read: one past the last applied (0 when none was)."""
        return 0 if self.last_applied is None else self.last_applied + 1

    def load(self, rows: Iterator[tuple[str, bytes, int]], lsn: int) -> None:
        """Replace the table by a checkpoint's rows, as of offset ``lsn``."""
        self.rows = {key: (value, offset) for key, value, offset in rows}
        self.last_applied = lsn
        self.applied_since_checkpoint = 0

    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        """One record: a put, or a delete when ``value`` is None (a tombstone)."""
        if not 0 <= offset <= MAX_LSN:
            raise KTableCheckpointerError(
                f"{self.topic}-{self.partition}: offset {offset} is outside 0..{MAX_LSN}, "
                "which no Kafka record has: check what feeds apply()"
            )
        text = decode_key(key, self.topic, self.partition, offset)
        if value is None:
            self.rows.pop(text, None)
        else:
            self.rows[text] = (value, offset)
        self.last_applied = offset
        self.applied_since_checkpoint += 1

    def columns(self) -> dict[str, list[Any]]:
        """The table as a kv-parquet snapshot's columns (``key``, ``value``, ``lsn``)."""
        keys = list(self.rows)
        return {
            "key": keys,
            "value": [self.rows[k][0] for k in keys],
            "lsn": [self.rows[k][1] for k in keys],
        }


@dataclass
class CheckpointSchedule:
    """When to checkpoint: after ``every_records`` records applied or ``every_seconds``
    since the last checkpoint with a record applied since, whichever comes first, and never
    sooner than ``MIN_CHECKPOINT_INTERVAL_S`` after the last checkpoint. ``clock`` gives
    seconds (monotonic; tests pass a fake)."""

    every_records: int
    every_seconds: float
    clock: Callable[[], float]
    last_checkpoint: float = field(init=False)

    def __post_init__(self) -> None:
        checked_number("every_records", self.every_records, 1, MAX_EVERY_RECORDS)
        if not isinstance(self.every_records, int):
            raise InvalidRequestError(f"every_records must be an integer: {self.every_records!r}")
        checked_number("every_seconds", self.every_seconds, MIN_EVERY_SECONDS, MAX_EVERY_SECONDS)
        self.last_checkpoint = self.clock()

    def due(self, applied_since_checkpoint: int) -> bool:
        """Whether a checkpoint is due now, given the records applied since the last."""
        if applied_since_checkpoint == 0:
            return False
        elapsed = self.clock() - self.last_checkpoint
        if elapsed < MIN_CHECKPOINT_INTERVAL_S:
            return False
        return applied_since_checkpoint >= self.every_records or elapsed >= self.every_seconds

    def done(self) -> None:
        """A checkpoint was written now."""
        self.last_checkpoint = self.clock()
