"""The boot procedure of docs/kafka-streams.md ("Which tasks an instance seeds: every one")
with Kafka's defaults, against the real broker and application: every instance seeds every
task, then they start; whichever tasks the assignor gives each, an instance restores only the
changelog written after the snapshots, and together they serve exactly the totals. Started
together (at the default acceptable.recovery.lag, and at 0), with one joining later, and the
contrast: instances seeded with half the tasks each, which the assignor does not follow.

The broker is this module's own, with the group coordinator at Kafka's default
``group.initial.rebalance.delay.ms`` (3 s: a new group's first rebalance waits for more
members; the session's broker sets 0 so that other tests do not wait). The application runs
with ``acceptable.recovery.lag``, ``num.standby.replicas`` and the assignor at their defaults
(conftest's FAST_APP_PROPERTIES set none of them) unless a test says otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from snapledger.kafka_streams.seed_format import TaskId
from snapledger.local.kafka_app import KafkaStreamsApp, Restored, start_together
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


@dataclass(frozen=True)
class Boot:
    """3 instances, each seeded with every task, started together, once they settled."""

    apps: list[KafkaStreamsApp]
    owned: list[list[str]]  # each instance's active tasks
    restored: list[int]  # each instance's records restored (its active tasks)
    standby: list[int]  # each instance's records loaded by standby or warm-up tasks
    restores: list[Restored]  # every store partition's restore, of all instances
    served: list[dict[str, int]]  # each instance's served totals
    tail: int  # changelog records written after the snapshots
    lsns: dict[int, int]  # each partition's snapshot
    expected: dict[str, int]  # the totals of what was produced


EVERY_TASK = None  # the seed's default


def _boot_seeded(
    story: Story,
    properties: Mapping[str, str],
    *,
    late: int = 0,
    seeds: Sequence[list[TaskId] | None] = (EVERY_TASK,) * INSTANCES,
) -> Boot:
    """An instance per entry of ``seeds``, each seeded with those tasks, started together,
    but the last ``late`` once the others run."""
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
    assert 0 < tail == len(second)
    expected = _totals(first, second)

    # When each of 3 instances seeds every task (the seed's default: no --tasks) into its
    # empty state dir, and they start
    states = [f"b{n}" for n in range(len(seeds))]
    seconds_all = [
        _seed_timed(story, state, tasks) for state, tasks in zip(states, seeds, strict=True)
    ]
    seconds_half = _seed_timed(story, "half", [TaskId(0, p) for p in range(PARTITIONS // 2)])
    apps = [story.instance(state) for state in states]
    for app in apps:
        app.properties.update(properties)
    start_together(apps[: len(apps) - late])
    start_together(apps[len(apps) - late :])
    owned = _settled(apps)
    restored = [app.restored_count() for app in apps]
    standby = [app.standby_loaded() for app in apps]
    print(
        f"\nseeds: {', '.join(f'{s:.2f}' for s in seconds_all)} s; "
        f"of {PARTITIONS // 2}: {seconds_half:.2f} s; tasks owned {owned}; restored "
        f"{restored} of a tail of {tail}; standby tasks loaded {standby}",
        file=sys.stderr,
    )
    restores = [r for app in apps for r in app.restored()]
    served = _served(apps, expected)
    return Boot(apps, owned, restored, standby, restores, served, tail, lsns, expected)


def _assert_only_the_tail_restored_and_the_state_exact(boot: Boot) -> None:
    # the assignor shared the tasks out, and each instance restored at most the records
    # written after the snapshots (whatever tasks it got: it held a snapshot of each), and
    # all of them together at most that too: no task was restored from the changelog's start
    assert sorted(t for tasks in boot.owned for t in tasks) == ALL_TASKS
    assert all(tasks for tasks in boot.owned), boot.owned  # every instance was given tasks
    assert all(count <= boot.tail for count in boot.restored), (boot.restored, boot.tail)
    assert sum(boot.restored) <= boot.tail, (boot.restored, boot.tail)
    assert boot.standby == [0] * INSTANCES  # no standby or warm-up task loaded anything
    # ...each store partition's restore starting right after its snapshot
    assert sorted((r.partition, r.start_offset) for r in boot.restores) == sorted(
        (p, lsn + 1) for p, lsn in boot.lsns.items()
    )
    # ...and together they serve exactly the totals of what was produced, each key once
    assert {k: v for s in boot.served for k, v in s.items()} == boot.expected
    assert sum(len(s) for s in boot.served) == len(boot.expected)


def test_every_instance_seeding_every_task_restores_only_the_tail_at_kafkas_defaults(
    story: Story,
):
    # Given/When: 3 instances seeded with every task started together, Kafka's defaults
    boot = _boot_seeded(story, {})

    # Then only the tail was restored, once, and the state is exact
    _assert_only_the_tail_restored_and_the_state_exact(boot)

    # When they stop, each state dir still holds every task's folder (the seeded ones it was
    # not given included); restarted with state.cleanup.delay.ms at 1 s instead of 10 min
    for app in boot.apps:
        app.stop()
    held_at_stop = [_task_folders(app) for app in boot.apps]
    for app in boot.apps:
        app.properties["state.cleanup.delay.ms"] = "1000"
    start_together(boot.apps)

    # Then Kafka Streams' state cleaner deletes the folders of the tasks each does not own
    deadline = time.monotonic() + 60.0
    while True:
        owned = _settled(boot.apps)
        held = [_task_folders(app) for app in boot.apps]
        if held == [set(tasks) for tasks in owned] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert held_at_stop == [set(ALL_TASKS)] * INSTANCES
    assert held == [set(tasks) for tasks in owned]
    assert sorted(t for tasks in owned for t in tasks) == ALL_TASKS


def test_with_acceptable_recovery_lag_below_every_tail_only_the_tail_is_restored(story: Story):
    # Given/When: the same, with acceptable.recovery.lag 0: no instance is caught up on any
    # task (each task's tail is at least one record), all equally behind
    boot = _boot_seeded(story, {"acceptable.recovery.lag": "0"})

    # Then no task is moved to a "more caught-up" instance: still only the tail, once
    _assert_only_the_tail_restored_and_the_state_exact(boot)


def test_an_instance_joining_later_restores_the_tails_of_the_tasks_it_takes_over(story: Story):
    # Given/When: 2 instances seeded with every task start together; once they run, the
    # third (seeded the same) starts: the group rebalances and gives it tasks of theirs
    boot = _boot_seeded(story, {}, late=1)

    # Then it loaded their tails from its own seed (as a warm-up task, or restoring them as
    # their owner), once more: each instance at most the tail, all together at most 3 times
    # it, every restore starting at or after the snapshot's next offset; the state is exact
    loaded = [r + s for r, s in zip(boot.restored, boot.standby, strict=True)]
    assert sorted(t for tasks in boot.owned for t in tasks) == ALL_TASKS
    assert boot.owned[-1], boot.owned  # the late one took tasks over
    assert all(count <= boot.tail for count in loaded), (boot.restored, boot.standby, boot.tail)
    assert sum(loaded) <= INSTANCES * boot.tail
    assert all(r.start_offset >= boot.lsns[r.partition] + 1 for r in boot.restores)
    assert {k: v for s in boot.served for k, v in s.items()} == boot.expected
    assert sum(len(s) for s in boot.served) == len(boot.expected)


def test_seeding_each_instance_with_half_the_tasks_does_not_steer_the_assignor(story: Story):
    # Given/When: 2 instances, one seeded with tasks 0_0-0_3, the other with 0_4-0_7 (the
    # procedure issue 43 found wanting), started together at Kafka's defaults
    first_half = [TaskId(0, p) for p in range(PARTITIONS // 2)]
    second_half = [TaskId(0, p) for p in range(PARTITIONS // 2, PARTITIONS)]
    boot = _boot_seeded(story, {}, seeds=[first_half, second_half])

    # Then the assignor, every instance caught up on every task (a whole changelog partition
    # is far below acceptable.recovery.lag), gave some tasks to the instance without their
    # snapshot: it restored them from the changelog's start, more than the tail in all; the
    # state is still exact
    seeded = [{t.partition for t in half} for half in (first_half, second_half)]
    from_start = [
        (n, r.partition)
        for n, app in enumerate(boot.apps)
        for r in app.restored()
        if r.start_offset == 0
    ]
    assert from_start, boot.owned
    assert all(partition not in seeded[n] for n, partition in from_start)
    assert sum(boot.restored) > boot.tail, (boot.restored, boot.tail)
    assert {k: v for s in boot.served for k, v in s.items()} == boot.expected
