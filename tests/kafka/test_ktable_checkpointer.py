"""examples/ktable_checkpointer against the real broker (the session's) and a registry run
in-process (moto's DynamoDB, a file:// store, the functions' handlers; the local router
registers what lands, as S3's notifications would): materialize, checkpoint, boot from the
checkpoints reading only the tail, the schedule, and GC under min count AND min age."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from examples.ktable_checkpointer import KeyEncodingError, KTableCheckpointer
from examples.ktable_checkpointer.__main__ import PROG, main
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client import Snapledger, SnapshotReader
from snapledger.clock import ManualClock
from snapledger.errors import InvalidRequestError
from snapledger.local import kafka_topics
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.local.router import Router
from snapledger.runtime import runtime_override
from tests.functions.support import POWERTOOLS_ENV
from tests.support import make_runtime, moto_ledger

_topics = itertools.count()


class InProcess:
    """The functions' handlers, called as Lambda would call them."""

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    servers: str
    root: str
    registry: Snapledger
    router: Router
    registry_clock: ManualClock

    def register_arrivals(self) -> list[str]:
        """What S3's notifications do: register every manifest that landed; the outcomes."""
        return [r["outcome"] for a in self.router.scan(settled=True) for r in a["records"]]

    def topic(self, partitions: int, **extra: str) -> str:
        name = f"ktable-{next(_topics)}"
        config = {"cleanup.policy": "compact", **extra}
        kafka_topics.create_topics(self.servers, [name], partitions=partitions, config=config)
        return name

    def checkpointer(self, topic: str, **options: Any) -> KTableCheckpointer:
        options.setdefault("every_records", 1_000)
        options.setdefault("every_seconds", 3_600.0)
        return KTableCheckpointer(topic, self.servers, self.root, registry=self.registry, **options)


@pytest.fixture
def world(kafka_broker: KafkaBroker, tmp_path: Path, monkeypatch) -> Iterator[World]:
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    clock = ManualClock()
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, FileObjectStore(tmp_path / "root"), clock)
        with runtime_override(runtime):
            yield World(
                kafka_broker.bootstrap_servers,
                (tmp_path / "root").as_uri(),
                Snapledger(InProcess()),
                Router(runtime.store, HANDLERS),
                clock,
            )


def replay(servers: str, topic: str) -> dict[str, bytes]:
    """The table a full replay of the topic gives: the last value per key, deletes dropped."""
    table: dict[str, bytes] = {}
    for record in kafka_topics.read_all(servers, topic):
        key, _ = record.text()
        assert key is not None
        if record.value is None:
            table.pop(key, None)
        else:
            table[key] = record.value
    return table


def puts_and_deletes(first: int, count: int, keys: int) -> list[tuple[str, str | None]]:
    """Record i puts key ``k{i % keys}``, except every 4th, which deletes it."""
    return [
        (f"k{i % keys:02d}", None if i % 4 == 3 else f"v{i}") for i in range(first, first + count)
    ]


@pytest.mark.kafka
def test_a_new_checkpointer_boots_from_the_checkpoints_and_reads_only_the_tail(world: World):
    # Given a compacted topic of 3 partitions with puts and deletes
    topic = world.topic(partitions=3)
    kafka_topics.produce(world.servers, topic, puts_and_deletes(0, 60, keys=17))

    # When a checkpointer materializes it and stops (its last checkpoint written)
    with world.checkpointer(topic) as first:
        assert {b.partition: b.lsn for b in first.boots.values()} == dict.fromkeys(range(3))
        assert first.catch_up() == 60
        assert first.table == replay(world.servers, topic)
        assert first.written == []  # 60 records, an hour: nothing due yet
    assert sorted(world.register_arrivals()) == ["became_latest"] * 3

    # Then each partition has one checkpoint: LSN = its last offset, offsets = the next one
    ends = {p.partition: p.end for p in kafka_topics.offsets(world.servers, topic)}
    checkpoints = {}
    for partition, end in ends.items():
        head = world.registry.latest(topic, partition)["head"]
        assert head["latest_lsn"] == end - 1
        record = world.registry.snapshot(topic, partition, head["latest_snapshot_id"])["snapshot"]
        assert record["offsets"] == {f"{topic}-{partition}": end}
        checkpoints[partition] = record["snapshot_id"]
        rows = SnapshotReader(world.root).open(record["manifest_key"]).to_arrow()
        assert dict(zip(rows["key"].to_pylist(), rows["value"].to_pylist(), strict=True)) == {
            k: v for k, (v, _) in first.partitions[partition].rows.items()
        }

    # When more records arrive (re-puts of deleted keys, deletes of checkpointed ones)
    tail = puts_and_deletes(60, 25, keys=17)
    kafka_topics.produce(world.servers, topic, tail)

    # Then a new checkpointer starts from the checkpoints, reads only the 25 new records,
    # and holds what a full replay gives
    with world.checkpointer(topic) as second:
        assert {p: b.snapshot_id for p, b in second.boots.items()} == checkpoints
        assert second.catch_up() == 25
        assert second.records_read == len(tail)
        assert second.table == replay(world.servers, topic)
        assert any(v is None for _, v in tail)  # the tail deleted keys


@pytest.mark.kafka
def test_checkpoints_come_every_n_records_or_t_seconds_never_twice_a_second(world: World):
    topic = world.topic(partitions=1)
    clock = FakeClock()
    produce = kafka_topics.produce
    with world.checkpointer(topic, every_records=5, every_seconds=10.0, clock=clock) as c:
        clock.now = 1.0
        produce(world.servers, topic, puts_and_deletes(0, 7, keys=3))
        c.catch_up()
        # the 5th record (offset 4) made one due; the next two are not yet 5
        assert [w.lsn for w in c.written] == [4]

        produce(world.servers, topic, puts_and_deletes(7, 4, keys=3))
        c.catch_up()
        assert [w.lsn for w in c.written] == [4]  # 6 records, but under a second since
        clock.now = 2.0
        c.poll(0.1)
        assert [w.lsn for w in c.written] == [4, 10]  # due once the second has passed

        produce(world.servers, topic, puts_and_deletes(11, 2, keys=3))
        c.catch_up()
        clock.now = 11.9
        c.poll(0.1)
        assert [w.lsn for w in c.written] == [4, 10]  # 2 records, 9.9 s
        clock.now = 12.0
        c.poll(0.1)
        assert [w.lsn for w in c.written] == [4, 10, 12]  # 10 s since the last

        clock.now = 100.0
        c.poll(0.1)
        assert len(c.written) == 3  # nothing changed since: no checkpoint
        c.close(checkpoint=False)
    assert len(c.written) == 3


@pytest.mark.kafka
def test_gc_keeps_the_newest_n_and_every_young_checkpoint(world: World):
    # Given the checkpointer's retention: keep the newest 2 and all younger than 1 hour
    topic = world.topic(partitions=1)
    every = timedelta(minutes=15)
    with world.checkpointer(topic, retention_min_count=2, retention_min_age_hours=1.0) as c:
        policy = world.registry.policy(topic)["policy"]
        assert (policy["min_count"], policy["min_age_hours"]) == (2, 1.0)
        # five checkpoints, registered 15 minutes apart
        for i in range(5):
            kafka_topics.produce(world.servers, topic, [("k", f"v{i}")])
            c.catch_up()
            c.checkpoint()
            assert world.register_arrivals() == ["became_latest"]
            world.registry_clock.advance(every)
    ids = [w.snapshot_id for w in c.written]
    world.registry_clock.advance(timedelta(minutes=5))  # ages: 80, 65, 50, 35, 20 minutes

    def statuses() -> dict[str, str]:
        records = world.registry.snapshots(topic, 0)["snapshots"]
        return {r["snapshot_id"]: r["status"] for r in records}

    # When GC runs: the two older than an hour go; three young ones stay, one beyond N
    world.registry.gc(topic)
    assert statuses() == {
        **dict.fromkeys(ids[:2], "DELETED"),
        **dict.fromkeys(ids[2:], "REGISTERED"),
    }
    # And two hours later, the newest 2 stay though old
    world.registry_clock.advance(timedelta(hours=2))
    world.registry.gc(topic)
    assert statuses() == {
        **dict.fromkeys(ids[:3], "DELETED"),
        **dict.fromkeys(ids[3:], "REGISTERED"),
    }

    # And a new checkpointer boots from the newest
    with world.checkpointer(topic) as again:
        assert again.boots[0].snapshot_id == ids[-1]
        assert again.table == {"k": b"v4"}
        assert again.catch_up() == 0


def checkpoint_twice(world: World, topic: str) -> tuple[KTableCheckpointer, int]:
    """Two registered checkpoints of a 1-partition topic (10 then 16 records) and 4 records
    after them; the checkpointer that wrote them, and the end offset."""
    with world.checkpointer(topic) as c:
        for first, count in ((0, 10), (10, 6)):
            kafka_topics.produce(world.servers, topic, puts_and_deletes(first, count, keys=5))
            c.catch_up()
            c.checkpoint()
    assert world.register_arrivals() == ["became_latest"] * 2
    kafka_topics.produce(world.servers, topic, puts_and_deletes(16, 4, keys=5))
    return c, 20


@pytest.mark.kafka
def test_a_checkpoint_that_fails_its_check_is_skipped_for_the_one_before(world: World):
    topic = world.topic(partitions=1)
    c, end = checkpoint_twice(world, topic)
    older, newer = c.written
    data = Path(world.root.removeprefix("file://")) / newer.prefix / newer.files[0].path
    data.write_bytes(b"not parquet" + data.read_bytes()[11:])  # same size, other bytes

    with world.checkpointer(topic) as again:
        boot = again.boots[0]
        assert (boot.snapshot_id, boot.lsn) == (older.snapshot_id, older.lsn)
        assert f"{newer.snapshot_id}: failed its check" in boot.reason
        assert again.catch_up() == end - (older.lsn + 1)  # the records after the older one
        assert again.table == replay(world.servers, topic)


@pytest.mark.kafka
def test_a_checkpoint_below_the_log_start_or_past_delete_retention_is_not_used(world: World):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    # Below the log start: the records after it are gone, so the partition is read from
    # its (new) beginning, and nothing older is tried (records can be deleted from a topic
    # that is compacted and deleted, as a compacted topic with a retention is)
    topic = world.topic(partitions=1, **{"cleanup.policy": "compact,delete"})
    c, end = checkpoint_twice(world, topic)
    admin = AdminClient({"bootstrap.servers": world.servers})
    for future in admin.delete_records([TopicPartition(topic, 0, 18)]).values():
        future.result(timeout=30)
    with world.checkpointer(topic) as again:
        boot = again.boots[0]
        assert boot.lsn is None
        assert "below the partition's log start 18" in boot.reason
        assert c.written[0].snapshot_id not in boot.reason
        assert again.catch_up() == end - 18
        again.close(checkpoint=False)

    # Older than delete.retention.ms: tombstones after it may be gone; read from the start
    topic = world.topic(partitions=1, **{"delete.retention.ms": "1000"})
    c, end = checkpoint_twice(world, topic)
    time.sleep(1.1)
    with world.checkpointer(topic) as again:
        assert again.boots[0].lsn is None
        assert "past the topic's delete.retention.ms (1000 ms)" in again.boots[0].reason
        assert again.catch_up() == end
        assert again.table == replay(world.servers, topic)


@pytest.mark.kafka
def test_a_key_that_is_not_utf8_is_refused_with_where_it_is(world: World):
    from confluent_kafka import Producer

    topic = world.topic(partitions=1)
    producer = Producer({"bootstrap.servers": world.servers})
    producer.produce(topic, key=b"ok", value=b"1")
    producer.produce(topic, key=b"\xff\xfebinary", value=b"2")
    assert producer.flush(30) == 0
    with world.checkpointer(topic) as c, pytest.raises(KeyEncodingError) as raised:
        c.catch_up()
    assert f"{topic}-0 at offset 1" in str(raised.value)
    assert "not UTF-8 text" in str(raised.value) and "base64" in str(raised.value)


@pytest.mark.kafka
def test_the_cli_reads_to_the_end_and_checkpoints_once(world: World, capsys):
    topic = world.topic(partitions=2)
    kafka_topics.produce(world.servers, topic, puts_and_deletes(0, 10, keys=4))
    argv = ["--topic", topic, "--bootstrap-servers", world.servers, "--root", world.root]
    assert main([*argv, "--once"], registry=world.registry) == 0
    out = capsys.readouterr().out
    assert "records_read=10\n" in out
    assert f"keys={len(replay(world.servers, topic))}\n" in out
    assert out.count("checkpoint lsn=") == 2


@pytest.mark.kafka
def test_a_topic_not_found_and_a_key_not_utf8_are_one_line_each(world: World, capsys):
    from confluent_kafka import Producer

    argv = ["--bootstrap-servers", world.servers, "--root", world.root, "--once"]
    assert main(["--topic", "no-such-topic", *argv], registry=world.registry) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{PROG}: error: topic 'no-such-topic' not")

    topic = world.topic(partitions=1)
    producer = Producer({"bootstrap.servers": world.servers})
    producer.produce(topic, key=b"\xff\xfe", value=b"1")
    assert producer.flush(30) == 0
    assert main(["--topic", topic, *argv], registry=world.registry) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{topic}-0 at offset 0 has a key that is not UTF-8" in err


def test_the_cli_help_and_the_bounds(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "--every-records" in capsys.readouterr().out
    registry = Snapledger(InProcess())
    for option, value in [("every_seconds", 0.5), ("every_records", 0), ("epoch", -1)]:
        with pytest.raises(InvalidRequestError, match=option):
            KTableCheckpointer("t", "x:1", "file:///tmp/x", registry=registry, **{option: value})


def test_the_doc_section_names_every_option_and_the_bounds_the_code_has():
    from examples.ktable_checkpointer import table
    from examples.ktable_checkpointer.__main__ import parser

    doc = (Path(__file__).resolve().parents[2] / "docs" / "kafka-streams.md").read_text()
    section = doc.split("## The KTable checkpointer", 1)[1]
    options = {a.option_strings[0] for a in parser()._actions if a.option_strings} - {"-h"}
    assert {o for o in options if f"`{o}`" not in section} <= {"--once", "--local", "--stack"}
    assert all(o in section for o in options)
    assert f"| `every_records` | 1 to {table.MAX_EVERY_RECORDS:,} |" in section
    assert (
        f"| `every_seconds` | {table.MIN_EVERY_SECONDS:g} to {table.MAX_EVERY_SECONDS:,.0f} |"
        in section
    )
    assert f"at least {table.MIN_CHECKPOINT_INTERVAL_S:g} s |" in section
    assert f"| `retention_min_count` | 1 to {table.MAX_RETENTION_MIN_COUNT} " in section
    assert f"0 to {table.MAX_RETENTION_MIN_AGE_HOURS:,.0f} (100 years" in section
    assert f"| key length | {table.MAX_KEY_BYTES // 1024} KiB of UTF-8 |" in section
    assert table.MAX_EPOCH == 2**63 - 1 and "| `epoch` | 0 to 2^63 - 1 |" in section
