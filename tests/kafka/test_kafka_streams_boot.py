"""The boot procedure of docs/kafka-streams.md ("Boot: which tasks an instance seeds") with
Kafka's defaults, against the real broker and application: every instance seeds every task,
then all start together; whichever tasks the assignor gives each, an instance restores only
the changelog written after the snapshots, and together they serve exactly the totals.

The broker is this module's own, with the group coordinator at Kafka's default
``group.initial.rebalance.delay.ms`` (3 s: a new group's first rebalance waits for more
members; the session's broker sets 0 so that other tests do not wait). The application runs
with ``acceptable.recovery.lag``, ``num.standby.replicas`` and the assignor at their defaults
(conftest's FAST_APP_PROPERTIES set none of them)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from snapledger.kafka_streams.seed_format import TaskId
from snapledger.local.kafka_app import KafkaStreamsApp, start_together
from snapledger.local.kafka_broker import KafkaBroker
from tests.kafka.conftest import FAST_APP_PROPERTIES, Registry, instances_on
from tests.kafka.orders import orders as _orders
from tests.kafka.orders import totals as _totals
from tests.kafka.test_kafka_streams_snapshots import PARTITIONS, Story

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

INSTANCES = 3
#: Kafka's default (GroupCoordinatorConfig), which the session's broker sets to 0.
GROUP_INITIAL_REBALANCE_DELAY_MS = 3000
ALL_TASKS = [f"0_{p}" for p in range(PARTITIONS)]
#: None of the settings the procedure's claim depends on is set by the tests' instances.
assert not {"acceptable.recovery.lag", "num.standby.replicas", "state.cleanup.delay.ms"} & set(
    FAST_APP_PROPERTIES
)


@pytest.fixture(scope="module")
def broker_at_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    config = {"group.initial.rebalance.delay.ms": str(GROUP_INITIAL_REBALANCE_DELAY_MS)}
    with KafkaBroker(tmp_path_factory.mktemp("kafka-broker-defaults"), config=config) as broker:
        yield broker


@pytest.fixture
def story(broker_at_defaults: KafkaBroker, registry: Registry, tmp_path: Path) -> Iterator[Story]:
    factories = instances_on(broker_at_defaults, tmp_path)
    yield Story(broker_at_defaults, next(factories), registry, tmp_path)
    next(factories, None)  # kills the instances a failed test left running


def _settled(apps: Sequence[KafkaStreamsApp], timeout_s: float = 60.0) -> list[list[str]]:
    """Each instance's active tasks once they share out the tasks, each task to one."""
    deadline = time.monotonic() + timeout_s
    while True:
        owned = [app.active_tasks() for app in apps]
        if sorted(t for tasks in owned for t in tasks) == ALL_TASKS or time.monotonic() > deadline:
            return owned
        time.sleep(0.2)


def _served(apps: Sequence[KafkaStreamsApp], expected: dict[str, int]) -> list[dict[str, int]]:
    """Each instance's served totals, polled until together they serve ``expected``."""
    deadline = time.monotonic() + 60.0
    while True:
        served = [app.totals() for app in apps]
        if {k: v for s in served for k, v in s.items()} == expected or time.monotonic() > deadline:
            return served
        time.sleep(0.2)


def _task_folders(app: KafkaStreamsApp) -> set[str]:
    app_dir = app.state_dir / app.application_id
    return {p.name for p in app_dir.iterdir() if p.is_dir() and p.name[0].isdigit()}


def _seed_timed(story: Story, state: str, tasks: list[TaskId] | None = None) -> float:
    started = time.perf_counter()
    seeded = story.seeder.seed(story.tmp / state, tasks)
    assert {s.outcome for s in seeded} == {"seeded"}
    return time.perf_counter() - started


def test_every_instance_seeding_every_task_restores_only_the_tail_at_kafkas_defaults(
    story: Story,
):
    # Given the application processed a first batch, every changelog partition was
    # snapshotted while it ran, then it processed a second batch and stopped
    first, second = _orders(71, 400), _orders(72, 120)
    story.produce(first)
    with story.instance("a") as a:
        a.wait_for_totals(_totals(first))
        lsns = story.snapshot()
        story.produce(second)
        a.wait_for_totals(_totals(first, second))
    tail = story.records_after(lsns)
    expected = _totals(first, second)

    # When each of 3 instances seeds every task (the seed's default: no --tasks) into its
    # empty state dir, and all 3 start together
    states = [f"b{n}" for n in range(INSTANCES)]
    seconds_all = [_seed_timed(story, state) for state in states]
    seconds_half = _seed_timed(story, "half", [TaskId(0, p) for p in range(PARTITIONS // 2)])
    apps = [story.instance(state) for state in states]
    start_together(apps)
    owned = _settled(apps)
    restored = [app.restored_count() for app in apps]
    restores = [r for app in apps for r in app.restored()]
    served = _served(apps, expected)
    print(
        f"\nseed of all {PARTITIONS} tasks: {', '.join(f'{s:.2f}' for s in seconds_all)} s; "
        f"of {PARTITIONS // 2}: {seconds_half:.2f} s; tasks owned {owned}; restored "
        f"{restored} of a tail of {tail}",
        file=sys.stderr,
    )

    # Then the assignor shared the tasks out, and each instance restored at most the records
    # written after the snapshots (whatever tasks it got: it held a snapshot of each), and
    # all of them together at most that too: no task was restored from the changelog's start
    assert sorted(t for tasks in owned for t in tasks) == ALL_TASKS
    assert all(tasks for tasks in owned), owned  # every instance was given tasks
    assert 0 < tail == len(second)
    assert all(count <= tail for count in restored), (restored, tail)
    assert sum(restored) <= tail, (restored, tail)
    # ...each store partition's restore starting right after its snapshot
    assert sorted((r.partition, r.start_offset) for r in restores) == sorted(
        (p, lsn + 1) for p, lsn in lsns.items()
    )
    # ...and together they serve exactly the totals of what was produced, each key once
    assert {k: v for s in served for k, v in s.items()} == expected
    assert sum(len(s) for s in served) == len(expected)

    # When they stop, each state dir still holds every task's folder (the seeded ones it was
    # not given included); restarted with state.cleanup.delay.ms at 1 s instead of 10 min
    for app in apps:
        app.stop()
    held_at_stop = [_task_folders(app) for app in apps]
    for app in apps:
        app.properties["state.cleanup.delay.ms"] = "1000"
    start_together(apps)

    # Then Kafka Streams' state cleaner deletes the folders of the tasks each does not own
    deadline = time.monotonic() + 60.0
    while True:
        owned = _settled(apps)
        held = [_task_folders(app) for app in apps]
        if held == [set(tasks) for tasks in owned] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert held_at_stop == [set(ALL_TASKS)] * INSTANCES
    assert held == [set(tasks) for tasks in owned]
    assert sorted(t for tasks in owned for t in tasks) == ALL_TASKS
