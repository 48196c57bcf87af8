"""Kafka's application reset against the real broker and application (issue 43, item 1;
DESIGN invariant 18): the application's topics are deleted and recreated (its input topic,
its internal topics, its consumer group: what the reset tool and an operator do), once with
the same partition count and once with another (8 -> 4). The new changelog's offsets restart
at 0 and soon pass the old snapshots' LSNs; no snapshot of an old incarnation is ever seeded,
continued or counted by retention, the new incarnation's snapshots become the latest though
their LSNs are lower, GC collects the old ones, and a booted instance serves exactly the new
changelog's state (docs/kafka-streams.md, "A recreated changelog")."""

from __future__ import annotations

from typing import Any

import pytest

from snapledger.kafka_streams.changelog import describe_changelog
from tests.kafka.orders import orders as _orders
from tests.kafka.orders import totals as _totals
from tests.kafka.test_kafka_streams_snapshots import PARTITIONS, Story
from tests.kafka.topic_reset import create_again, delete_topics

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
#: Each incarnation's input seeds: its first, small batch (its snapshots' LSNs stay below the
#: old ones') and its larger second (its changelog's end offsets pass them).
SEEDS = {"b": (62, 63), "c": (64, 65)}


@pytest.fixture
def story(kafka_broker, app_factory, registry, tmp_path) -> Story:
    return Story(kafka_broker, app_factory, registry, tmp_path)


def _named(prefix: str, batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The batch with its customers renamed: each incarnation has keys of its own, so one
    stale key served is seen."""
    return [(f"{prefix}-{customer}", amount) for customer, amount in batch]


def _reset(story: Story, partitions: int) -> None:
    """Kafka's application reset, the application stopped: its input topic and internal
    topics deleted, its consumer group deleted (its committed offsets with it), and the input
    topic created again with ``partitions`` partitions; the application creates its changelog
    again at its start."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": story.servers})
    listed = admin.list_topics(timeout=30).topics
    delete_topics(
        story.servers, [story.orders, *(t for t in listed if t.startswith(f"{story.app_id}-"))]
    )
    for future in admin.delete_consumer_groups([story.app_id]).values():
        future.result(timeout=30)
    create_again(story.servers, [story.orders], partitions=partitions)


def _incarnation(story: Story, name: str, state: str) -> tuple[dict[str, int], Any]:
    """A new incarnation's life: a small batch processed and snapshotted (the changelog's
    offsets still below the old snapshots' LSNs), then a larger one processed (past them).
    Its totals, and the snapshot run."""
    first, second = SEEDS[name]
    small = _named(name, _orders(first, 48, customers=200))
    large = _named(name, _orders(second, 800, customers=200))
    story.produce(small)
    with story.instance(state) as app:
        assert app.wait_for_totals(_totals(small)) == _totals(small)
        made = story.snapshotter.snapshot(work_dir=story.tmp)
        story.produce(large)
        assert app.wait_for_totals(_totals(small, large)) == _totals(small, large)
    return _totals(small, large), made


def _records(story: Story, partition: int) -> list[dict[str, Any]]:
    return story.registry.client.snapshots(story.changelog, partition)["snapshots"]


def test_after_a_reset_only_the_new_incarnations_snapshots_are_used(story: Story):
    # Given incarnation A (8 partitions) processed orders and every partition was snapshotted
    first = _named("a", _orders(61, 400, customers=200))
    story.produce(first)
    with story.instance("a") as a:
        assert a.wait_for_totals(_totals(first)) == _totals(first)
        a_lsns = story.snapshot()
    topic_a = describe_changelog(story.servers, story.changelog).topic_id
    assert sorted(a_lsns) == list(range(PARTITIONS))

    for name, partitions, epoch in (("b", PARTITIONS, 2), ("c", 4, 3)):
        # When the application is reset (the same partition count, then 4) and runs again
        _reset(story, partitions)
        served, made = _incarnation(story, name, f"{name}-run")
        changelog = describe_changelog(story.servers, story.changelog)
        assert changelog.topic_id != topic_a and sorted(changelog.partitions) == list(
            range(partitions)
        )
        # Then its first snapshots began the lineages over (from empty, the epoch above the
        # highest), and each is the latest though its LSN is below the old latest's
        assert [m.partition for m in made] == list(range(partitions))
        for m in made:
            assert m.base_snapshot_id is None and m.written is not None
            assert "made from another incarnation of the changelog" in m.note
            assert f"from empty at epoch {epoch}" in m.note
            head = story.registry.client.latest(story.changelog, m.partition)["head"]
            assert (head["latest_snapshot_id"], head["max_epoch"]) == (
                m.written.snapshot_id,
                epoch,
            )
            assert m.written.lsn < a_lsns[m.partition]
        # ...and the changelog has grown past every old snapshot's LSN since
        ends = {p: changelog.partitions[p].log_end for p in changelog.partitions}
        assert all(ends[p] > a_lsns[p] + 1 for p in ends), (ends, a_lsns)

        # When an instance boots after the seed
        seeded = story.seeder.seed(story.tmp / f"{name}-boot")
        with story.instance(f"{name}-boot") as booted:
            served_booted = booted.wait_for_totals(served)
        # Then every task was seeded from its new snapshot, every older incarnation's skipped
        # saying why, and it serves exactly the new changelog's state: no stale key
        for task in seeded:
            p = int(task.task.split("_")[1])
            assert (task.outcome, task.snapshot_id) == ("seeded", made[p].written.snapshot_id)
            others = [s for s in task.skipped if "another incarnation" in s.reason]
            assert len(others) == epoch - 1  # one snapshot of each older incarnation
            assert all(changelog.topic_id in s.reason for s in others)
        assert served_booted == served

    # When GC runs (every snapshot may go by age; one kept by count), planned then for real
    policy = story.registry.client.set_policy(story.changelog, min_count=1, min_age_hours=0)
    assert policy.get("ok", True), policy
    plan = story.registry.client.gc_plan(story.changelog)["report"]
    planned = {
        (lineage["partition"], d["snapshot_id"]): d.get("unrestorable", "")
        for lineage in plan["lineages"]
        for d in lineage["deleted"]
    }
    story.registry.client.gc(story.changelog)
    # Then the old incarnations' snapshots were planned and collected as unrestorable (A's
    # on every partition; B's where C has snapshots), and the current ones kept
    for p in range(PARTITIONS):
        records = {r["snapshot_id"]: r for r in _records(story, p)}
        current = max(records.values(), key=lambda r: r["epoch"])
        assert current["status"] == "REGISTERED"
        old = [r for r in records.values() if r is not current]
        assert old and all(r["status"] == "DELETED" for r in old), records
        assert all(
            planned[(p, r["snapshot_id"])].startswith("made from another incarnation") for r in old
        )
    assert len(planned) == PARTITIONS + 4
