"""The Kafka Streams application of kafka/app against the real broker: it serves the totals
of what was produced, and the state directory experiment issue 38 rests on — task folders
copied into a new, empty state dir before start are used: only the changelog after the
offsets they reflect is restored (docs/kafka-streams.md, "The state directory Kafka Streams
4.4 reads")."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger.local import kafka_topics
from snapledger.local.kafka_app import KafkaStreamsApp, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.orders import orders as _orders
from tests.kafka.orders import totals as _totals

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 8
_names = itertools.count()


def _topics(broker: KafkaBroker) -> tuple[str, str, str]:
    """A new application id with its own input and output topics (8 partitions each)."""
    n = next(_names)
    app_id, orders, output = f"totals-{n}", f"orders-{n}", f"totals-output-{n}"
    kafka_topics.create_topics(broker.bootstrap_servers, [orders, output], partitions=PARTITIONS)
    return app_id, orders, output


def _copy_task_folders(source: Path, target: Path) -> list[str]:
    """Copy ``{subtopology}_{partition}/`` folders only (not the app dir's process
    metadata, nor any lock file) into an empty app dir; return their names."""
    target.mkdir(parents=True)
    names = sorted(p.name for p in source.iterdir() if p.is_dir() and p.name[0].isdigit())
    for name in names:
        shutil.copytree(source / name, target / name)
    return names


def test_the_app_serves_the_totals_of_what_was_produced(
    kafka_broker: KafkaBroker, app_factory: Callable[..., KafkaStreamsApp], tmp_path: Path
):
    # Given orders, including a value that is no amount, on an 8-partition topic
    app_id, orders, output = _topics(kafka_broker)
    batch = _orders(seed=1, count=300)
    kafka_topics.produce(kafka_broker.bootstrap_servers, orders, [*batch, ("c999", "12.5x")])

    # When the application runs over them
    app = app_factory(app_id, tmp_path / "state", input_topic=orders, output_topic=output)
    with app:
        served = app.wait_for_totals(_totals(batch))
        tasks = app.active_tasks()

    # Then it serves every customer's sum, computed here from what was produced; it owned
    # the 8 tasks of its one subtopology, skipped the bad value and closed cleanly
    assert served == _totals(batch)
    assert tasks == [f"0_{p}" for p in range(PARTITIONS)]
    assert app.stopped_cleanly()
    last_totals = {
        r.key.decode(): int.from_bytes(r.value or b"", "big", signed=True)  # Serdes.Long
        for r in kafka_topics.read_all(kafka_broker.bootstrap_servers, output)
        if r.key is not None
    }
    assert last_totals == _totals(batch)


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_copied_task_folders_restore_only_the_changelog_tail(
    kafka_broker: KafkaBroker,
    app_factory: Callable[..., KafkaStreamsApp],
    tmp_path: Path,
    guarantee: str,
):
    servers = kafka_broker.bootstrap_servers
    app_id, orders, output = _topics(kafka_broker)
    props = {"processing.guarantee": guarantee}

    def instance(state: str) -> KafkaStreamsApp:
        return app_factory(
            app_id, tmp_path / state, input_topic=orders, output_topic=output, properties=props
        )

    # Given instance A processed a first batch and closed cleanly: its task folders are
    # the "snapshot", at the changelog's end offsets of that moment
    first, second, third = _orders(1, 400), _orders(2, 150), _orders(3, 60)
    kafka_topics.produce(servers, orders, first)
    with instance("a") as a:
        assert a.wait_for_totals(_totals(first)) == _totals(first)
    assert a.stopped_cleanly()
    changelog = changelog_topic(app_id)
    at_snapshot = {p.partition: p.end for p in kafka_topics.offsets(servers, changelog)}
    app_dir = tmp_path / "a" / app_id
    contents = {
        str(p.relative_to(app_dir / "0_0")) for p in (app_dir / "0_0").rglob("*") if p.is_file()
    }
    snapshot_dir = tmp_path / "snapshot" / app_id
    copied = _copy_task_folders(app_dir, snapshot_dir)

    # ...then A ran on over a second batch, so the changelog grew past the snapshot
    kafka_topics.produce(servers, orders, second)
    with instance("a") as a:
        assert a.wait_for_totals(_totals(first, second)) == _totals(first, second)
    tail = [
        r for r in kafka_topics.read_all(servers, changelog) if r.offset >= at_snapshot[r.partition]
    ]
    whole = kafka_topics.read_all(servers, changelog)

    # When B starts on a new state dir holding only the copied task folders (a third batch
    # of input waiting), and later C starts on an empty state dir
    kafka_topics.produce(servers, orders, third)
    shutil.copytree(snapshot_dir, tmp_path / "b" / app_id)
    with instance("b") as b:
        served_b = b.wait_for_totals(_totals(first, second, third))
        restored_b = b.restored()
        tasks_b = b.active_tasks()
    whole_at_c = kafka_topics.read_all(servers, changelog)
    with instance("c") as c:
        served_c = c.totals()
        restored_c = c.restored()

    # Then the copied folders hold the task's RocksDB store, whose own column family keeps
    # the changelog offsets (KIP-1035): no .checkpoint file is written in 4.4.0
    assert copied == [f"0_{p}" for p in range(PARTITIONS)]
    assert not any(name.startswith(".checkpoint") for name in contents), contents
    assert "rocksdb/totals/CURRENT" in contents
    assert (app_dir / "kafka-streams-process-metadata").is_file()
    assert not (snapshot_dir / "kafka-streams-process-metadata").exists()
    assert tasks_b == copied  # B was given every task whose folder it had
    # B restored exactly the changelog records written after the snapshot, from its offsets
    assert sum(r.count for r in restored_b) == len(tail) == len(second)
    assert {r.partition for r in restored_b if r.count} == {r.partition for r in tail}
    if guarantee == "at_least_once":  # under EOS the end offset also counts commit markers
        for r in restored_b:
            assert r.start_offset == at_snapshot[r.partition]
    # C restored the whole changelog, and both serve the same totals, the right ones
    assert (
        sum(r.count for r in restored_c) == len(whole_at_c) == len(first) + len(second) + len(third)
    )
    assert len(whole) == len(first) + len(second)
    assert served_b == served_c == _totals(first, second, third)
