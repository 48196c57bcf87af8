"""The Kafka Streams seeder's stdin format, task folder names and ``.checkpoint`` files.

Pure: no I/O beyond the bytes and strings given. docs/kafka-streams-format.md is the
reference; kafka/seeder (Java) reads what :func:`encode_records` writes. The boot path
(``seed.py``) downloads a snapshot's store folder and uses only the task folder names here;
the record stream and ``.checkpoint`` helpers are for feeding ``kafka-seeder seed`` a state
built elsewhere (and are how its tests check the Java reader and writer).

A record stream is the header ``SLKS`` and the version byte 1, then per record, big-endian:
int32 key length (1..MAX_KEY_BYTES), the key, int32 value length (-1 = tombstone, else
0..MAX_VALUE_BYTES), the value, int64 record timestamp (>= 0). Records apply in order: a
later record for a key replaces it, a tombstone deletes it (as the changelog restores).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from snapledger.errors import InvalidRequestError

MAGIC = b"SLKS"
VERSION = 1
#: A record's key: Kafka's default max.message.bytes is about 1 MiB for a whole batch.
MAX_KEY_BYTES = 1 << 20
#: A record's value (16 MiB): a changelog value past it is refused by the seeder.
MAX_VALUE_BYTES = 16 << 20
#: Kafka offsets and timestamps are int64.
MAX_INT64 = (1 << 63) - 1
#: Kafka Streams' TaskId numbers are Java ints (StateDirectory's folder pattern ``\d+_\d+``).
MAX_TASK_NUMBER = (1 << 31) - 1
#: OffsetCheckpoint's sentinel for "offset unknown" (OffsetCheckpoint.OFFSET_UNKNOWN).
OFFSET_UNKNOWN = -4
CHECKPOINT_VERSION = 0
CHECKPOINT_FILE_NAME = ".checkpoint"

_LENGTH = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")
_TASK = re.compile(r"(\d+)_(\d+)")
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class SeedFormatError(InvalidRequestError):
    """A record, task id or checkpoint file is not in the format; the message says which."""


@dataclass(frozen=True)
class SeedRecord:
    """One changelog record: ``value`` None is a tombstone (the key is deleted)."""

    key: bytes
    value: bytes | None
    timestamp: int


@dataclass(frozen=True, order=True)
class TaskId:
    """A Kafka Streams task: ``{subtopology}_{partition}`` names its state folder."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"


def _check_record(index: int, record: SeedRecord) -> None:
    where = f"record {index} (counting from 0)"
    if not 1 <= len(record.key) <= MAX_KEY_BYTES:
        raise SeedFormatError(
            f"{where}: the key is {len(record.key)} bytes; a changelog key is 1..{MAX_KEY_BYTES}"
        )
    if record.value is not None and len(record.value) > MAX_VALUE_BYTES:
        raise SeedFormatError(
            f"{where}: the value is {len(record.value)} bytes, over {MAX_VALUE_BYTES}"
        )
    if not 0 <= record.timestamp <= MAX_INT64:
        raise SeedFormatError(
            f"{where}: timestamp {record.timestamp} is outside 0..{MAX_INT64} (Kafka's)"
        )


def iter_encoded(records: Iterable[SeedRecord]) -> Iterator[bytes]:
    """The stream in pieces (the header, then one piece per record), to pipe into the seeder
    without holding it all; a record out of bounds raises SeedFormatError when reached."""
    yield MAGIC + bytes([VERSION])
    for index, record in enumerate(records):
        _check_record(index, record)
        value = (
            _LENGTH.pack(-1)
            if record.value is None
            else _LENGTH.pack(len(record.value)) + record.value
        )
        yield _LENGTH.pack(len(record.key)) + record.key + value + _TIMESTAMP.pack(record.timestamp)


def encode_records(records: Iterable[SeedRecord]) -> bytes:
    """The whole stream the seeder reads on stdin."""
    return b"".join(iter_encoded(records))


def decode_records(data: bytes) -> list[SeedRecord]:
    """The records of a stream, checked as the seeder checks them."""
    if data[: len(MAGIC)] != MAGIC or len(data) < len(MAGIC) + 1:
        raise SeedFormatError(
            'not a seeder record stream: it does not start with "SLKS" and a version'
        )
    if data[len(MAGIC)] != VERSION:
        raise SeedFormatError(
            f"the record stream is version {data[len(MAGIC)]}; this reads {VERSION}"
        )
    out: list[SeedRecord] = []
    pos = len(MAGIC) + 1
    try:
        while pos < len(data):
            (key_len,) = _LENGTH.unpack_from(data, pos)
            if not 1 <= key_len <= MAX_KEY_BYTES:
                raise SeedFormatError(
                    f"record {len(out)}: key length {key_len} is outside 1..{MAX_KEY_BYTES}"
                )
            key = _take(data, pos + 4, key_len)
            pos += 4 + key_len
            (value_len,) = _LENGTH.unpack_from(data, pos)
            pos += 4
            if not -1 <= value_len <= MAX_VALUE_BYTES:
                raise SeedFormatError(
                    f"record {len(out)}: value length {value_len} is outside -1..{MAX_VALUE_BYTES}"
                )
            value = None if value_len == -1 else _take(data, pos, value_len)
            pos += max(value_len, 0)
            (timestamp,) = _TIMESTAMP.unpack_from(data, pos)
            pos += 8
            record = SeedRecord(key, value, timestamp)
            _check_record(len(out), record)
            out.append(record)
    except struct.error as exc:
        raise SeedFormatError(
            f"record {len(out)}: the stream ends inside the record (truncated)"
        ) from exc
    return out


def _take(data: bytes, start: int, length: int) -> bytes:
    if start + length > len(data):
        raise struct.error("short")
    return data[start : start + length]


def parse_task_id(text: str) -> TaskId:
    """``"0_3"`` -> TaskId(0, 3), as StateDirectory recognises a task folder's name."""
    match = _TASK.fullmatch(text)
    if match is None:
        raise SeedFormatError(f"task {text!r}: a task is {{subtopology}}_{{partition}}, e.g. 0_3")
    sub, part = int(match[1]), int(match[2])
    if sub > MAX_TASK_NUMBER or part > MAX_TASK_NUMBER:
        raise SeedFormatError(f"task {text!r}: its numbers are at most {MAX_TASK_NUMBER}")
    return TaskId(sub, part)


def task_folder(state_dir: Path, application_id: str, task: TaskId) -> Path:
    """``{state.dir}/{application.id}/{subtopology}_{partition}``."""
    if not re.fullmatch(r"[a-zA-Z0-9._-]+", application_id):
        raise SeedFormatError(
            f"application id {application_id!r}: use letters, digits, '.', '_' and '-'"
        )
    return state_dir / application_id / str(task)


def changelog_topic(application_id: str, store: str) -> str:
    """The changelog Kafka Streams names for a store: ``{application.id}-{store}-changelog``."""
    return f"{application_id}-{store}-changelog"


def format_checkpoint(offsets: dict[tuple[str, int], int]) -> str:
    """A ``.checkpoint`` file's text as OffsetCheckpoint#write writes it."""
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    for (topic, partition), offset in sorted(offsets.items()):
        if not _TOPIC.fullmatch(topic) or partition < 0:
            raise SeedFormatError(f"{topic}-{partition}: not a topic partition")
        if not (0 <= offset <= MAX_INT64 or offset == OFFSET_UNKNOWN):
            raise SeedFormatError(f"{topic}-{partition}: offset {offset} is negative")
        lines.append(f"{topic} {partition} {offset}")
    return "\n".join(lines) + "\n"


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """A ``.checkpoint`` file's offsets, read as OffsetCheckpoint#read reads it: version 0,
    the entry count, then ``topic partition offset`` lines; an invalid offset (negative, not
    -4) is skipped and counted off, and the count must match."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise SeedFormatError("a .checkpoint file starts with its version and entry count lines")
    try:
        version, expected = int(lines[0].strip()), int(lines[1].strip())
    except ValueError as exc:
        raise SeedFormatError(f"the .checkpoint header is not two numbers: {lines[:2]}") from exc
    if version != CHECKPOINT_VERSION:
        raise SeedFormatError(f"unknown offset checkpoint version: {version}")
    offsets: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        pieces = line.split()
        if len(pieces) != 3:
            raise SeedFormatError(f"malformed line in offset checkpoint file: {line!r}")
        try:
            topic, partition, offset = pieces[0], int(pieces[1]), int(pieces[2])
        except ValueError as exc:
            raise SeedFormatError(f"malformed line in offset checkpoint file: {line!r}") from exc
        if offset >= 0 or offset == OFFSET_UNKNOWN:
            offsets[(topic, partition)] = offset
        else:
            expected -= 1
    if len(offsets) != expected:
        raise SeedFormatError(f"expected {expected} entries but found only {len(offsets)}")
    return offsets
