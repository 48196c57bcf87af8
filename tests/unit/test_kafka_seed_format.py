"""snapledger.kafka_streams.seed_format: the seeder's stdin format, task folders and
``.checkpoint`` files as Kafka Streams 4.4.0's OffsetCheckpoint writes and reads them."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snapledger.kafka_streams.seed_format import (
    MAX_KEY_BYTES,
    MAX_TASK_NUMBER,
    MAX_VALUE_BYTES,
    SeedFormatError,
    SeedRecord,
    TaskId,
    changelog_topic,
    decode_records,
    encode_records,
    format_checkpoint,
    parse_checkpoint,
    parse_task_id,
    task_folder,
)

records = st.builds(
    SeedRecord,
    key=st.binary(min_size=1, max_size=16),
    value=st.none() | st.binary(max_size=16),
    timestamp=st.integers(0, 2**63 - 1),
)


def test_a_record_is_laid_out_big_endian_after_the_header():
    # Given a put and a tombstone, When encoded, Then the bytes are exactly the documented ones
    data = encode_records([SeedRecord(b"k", b"vv", 7), SeedRecord(b"k", None, 8)])
    assert data == (
        b"SLKS\x01"
        + struct.pack(">i", 1) + b"k" + struct.pack(">i", 2) + b"vv" + struct.pack(">q", 7)
        + struct.pack(">i", 1) + b"k" + struct.pack(">i", -1) + struct.pack(">q", 8)
    )  # fmt: skip


@given(st.lists(records, max_size=20))
def test_records_round_trip(recs):
    assert decode_records(encode_records(recs)) == recs


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (SeedRecord(b"", b"v", 0), "the key is 0 bytes"),
        (SeedRecord(b"k" * (MAX_KEY_BYTES + 1), b"v", 0), f"1..{MAX_KEY_BYTES}"),
        (SeedRecord(b"k", b"v", -1), "timestamp -1 is outside"),
    ],
)
def test_a_record_out_of_bounds_is_refused_naming_it(record, message):
    with pytest.raises(SeedFormatError, match=message):
        encode_records([SeedRecord(b"ok", b"v", 0), record])


def test_the_largest_key_is_accepted():
    assert len(encode_records([SeedRecord(b"k" * MAX_KEY_BYTES, None, 0)])) > MAX_KEY_BYTES


def test_a_truncated_or_foreign_stream_is_refused():
    data = encode_records([SeedRecord(b"k", b"v", 1)])
    with pytest.raises(SeedFormatError, match="truncated"):
        decode_records(data[:-1])
    with pytest.raises(SeedFormatError, match='start with "SLKS"'):
        decode_records(b"PAR1....")
    with pytest.raises(SeedFormatError, match="version 2"):
        decode_records(b"SLKS\x02")


def test_task_folders_are_named_as_kafka_streams_names_them():
    task = parse_task_id("0_3")
    assert task == TaskId(0, 3)
    assert task_folder(Path("/s"), "app", task) == Path("/s/app/0_3")
    assert changelog_topic("app", "totals") == "app-totals-changelog"
    assert parse_task_id(f"{MAX_TASK_NUMBER}_0") == TaskId(MAX_TASK_NUMBER, 0)


@pytest.mark.parametrize("text", ["0-3", "a_1", "0_3_1", f"{MAX_TASK_NUMBER + 1}_0", ""])
def test_a_task_that_is_not_one_is_refused(text):
    with pytest.raises(SeedFormatError, match="task"):
        parse_task_id(text)


def test_an_application_id_that_cannot_name_a_folder_is_refused():
    with pytest.raises(SeedFormatError, match=re.escape("application id '../x'")):
        task_folder(Path("/s"), "../x", TaskId(0, 0))


def test_checkpoint_text_is_offset_checkpoints():
    # OffsetCheckpoint#write: version 0, the count, one "topic partition offset" line each
    text = format_checkpoint({("app-totals-changelog", 3): 41})
    assert text == "0\n1\napp-totals-changelog 3 41\n"
    assert parse_checkpoint(text) == {("app-totals-changelog", 3): 41}


def test_checkpoint_reading_follows_offset_checkpoint_read():
    # an invalid (negative, not -4) offset is skipped and counted off; -4 is kept
    assert parse_checkpoint("0\n2\nt 0 -1\nt 1 -4\n") == {("t", 1): -4}
    for text, message in [
        ("1\n0\n", "unknown offset checkpoint version: 1"),
        ("0\n2\nt 0 5\n", "expected 2 entries but found only 1"),
        ("0\n1\nt 0\n", "malformed line"),
        ("0\n1\nt x 5\n", "malformed line"),
        ("0\n", "starts with its version"),
    ]:
        with pytest.raises(SeedFormatError, match=message):
            parse_checkpoint(text)


def test_the_doc_and_the_java_reader_state_the_same_bounds():
    # docs/kafka-streams-format.md's record table, seed_format and SeedRecordReader.java agree
    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "kafka-streams-format.md").read_text()
    java = (
        repo / "kafka/seeder/src/main/java/dev/snapledger/kafka/seeder/SeedRecordReader.java"
    ).read_text()
    for name, value, java_expr, java_value in [
        ("MAX_KEY_BYTES", MAX_KEY_BYTES, "1 << 20", 1 << 20),
        ("MAX_VALUE_BYTES", MAX_VALUE_BYTES, "16 << 20", 16 << 20),
    ]:
        assert f"{value:,} (`{name}`)" in doc
        assert f"static final int {name} = {java_expr};" in java
        assert java_value == value


def test_the_doc_names_every_seeder_command_and_every_field_it_prints():
    # docs/kafka-streams-format.md's usage block shows each command of SeederMain, and names
    # each field of the JSON lines catch-up and rewind print (their Outcome.json())
    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "kafka-streams-format.md").read_text()
    seeder = repo / "kafka/seeder/src/main/java/dev/snapledger/kafka/seeder"
    commands = re.search(
        r"COMMANDS = List\.of\(([^)]*)\)", (seeder / "SeederMain.java").read_text()
    )
    assert commands is not None
    for command in re.findall(r'"([a-z-]+)"', commands[1]):
        assert f"kafka-seeder.jar {command} " in doc, command
    for java in ("ChangelogCatchUp.java", "ChangelogRewind.java"):
        body = (seeder / java).read_text()
        printed = body[body.index("String json()") : body.index("String json()") + 800]
        fields = re.findall(r'\\"([a-z_]+)\\":', printed)
        assert fields, java
        for name in fields:
            assert f"`{name}`" in doc, f"{java}: {name}"
