"""A Kafka broker and a local snapledger registry on one machine, for ``make demo-kafka`` and
the Kafka Streams benchmark (bench/bench_kafka_streams.py).

The registry is the embedded default ``make demo`` uses: DynamoDB Local (in memory), a
``file://`` store and the functions in-process; each snapshot the snapshotter writes is
delivered to ``register`` as the router delivers an arrival (in AWS: the S3 event), and
each answer kept (``registrations``: which layout checked it). The applications' changelog
topics are Kafka Streams streams of the registry (``local up --kafka-streams-stream``'s
way): registration runs the kafka-streams strategy's checks on their snapshots. The
functions' clock is a ``ManualClock`` (GC's ages can be moved on). Also: a batching
producer (millions of records quickly), a wait for the application to have processed a
number of records (its changelog's end offsets), and a boot of an instance, timed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from snapledger.client.control import Snapledger
from snapledger.client.writer import WrittenSnapshot
from snapledger.clock import ManualClock
from snapledger.kafka_streams.seed import StoreSeeder, TaskSeed
from snapledger.kafka_streams.snapshotter import StoreSnapshotter
from snapledger.local import kafka_topics
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.kafka_app import STORE, KafkaStreamsApp, changelog_topic
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.runtime import use_runtime

PARTITIONS = 8
#: Every update reaches the store's changelog (no record cache), so the changelog holds one
#: record per order processed; commits every 200 ms; one stream thread.
APP_PROPERTIES: Mapping[str, str] = {
    "commit.interval.ms": "200",
    "statestore.cache.max.bytes": "0",
    "num.stream.threads": "1",
}
#: How long an instance may take to reach RUNNING (a full replay of 5M records included).
BOOT_TIMEOUT_S = 1800.0


class InProcess:
    """The client's transport: the functions called in this process."""

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@dataclass(frozen=True)
class Boot:
    """One instance's boot: the seed (0 without one), start to RUNNING, records restored."""

    app: KafkaStreamsApp
    seed_s: float
    start_s: float
    restored: int
    seeded: tuple[TaskSeed, ...] = ()

    @property
    def total_s(self) -> float:
        return self.seed_s + self.start_s


@dataclass
class KafkaWorld:
    broker: KafkaBroker
    registry: Snapledger
    root: str
    router: Router
    clock: ManualClock
    work: Path
    #: The registry's DynamoDB Local and home folder (its ``file://`` store): what another
    #: process joins it with (``LocalRuntime(home=..., endpoint=...)``).
    endpoint: str
    home: Path
    #: The applications whose changelogs have the kafka-streams layout in the registry.
    applications: tuple[str, ...] = ()
    apps: list[KafkaStreamsApp] = field(default_factory=list)
    #: Every registration's answer (a register answer's records), in order.
    registrations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def servers(self) -> str:
        return self.broker.bootstrap_servers

    def deliver(self, written: WrittenSnapshot) -> None:
        for answer in self.router.scan((written.prefix,), settled=True):
            self.registrations.extend(answer.get("records", []))

    def snapshotter(self, app_id: str) -> StoreSnapshotter:
        return StoreSnapshotter(
            self.registry, self.root, self.servers, app_id, STORE, on_written=self.deliver
        )

    def seeder(self, app_id: str) -> StoreSeeder:
        return StoreSeeder(self.registry, self.root, self.servers, app_id, STORE)

    def app(self, app_id: str, state: str, input_topic: str, output_topic: str) -> KafkaStreamsApp:
        if app_id not in self.applications:
            raise ValueError(
                f"application {app_id!r} is not one of the registry's ({self.applications}): "
                "give it to kafka_world(applications=...) so its changelog has its layout"
            )
        app = KafkaStreamsApp(
            self.servers,
            app_id,
            self.work / "state-dirs" / state,
            self.work / "logs" / f"{app_id}-{state}.log",
            properties=APP_PROPERTIES,
            input_topic=input_topic,
            output_topic=output_topic,
        )
        self.apps.append(app)
        return app

    def boot(
        self, app_id: str, state: str, input_topic: str, output_topic: str, *, seed: bool
    ) -> Boot:
        """Seed (when ``seed``) an empty state dir, start an instance on it: timed."""
        app = self.app(app_id, state, input_topic, output_topic)
        started = time.perf_counter()
        seeded = tuple(self.seeder(app_id).seed(app.state_dir)) if seed else ()
        seeded_at = time.perf_counter()
        app.start(timeout_s=BOOT_TIMEOUT_S)
        running_at = time.perf_counter()
        return Boot(app, seeded_at - started, running_at - seeded_at, app.restored_count(), seeded)

    def changelog_records(self, app_id: str) -> int:
        """The records in the application's changelog (end offsets: no compaction yet)."""
        try:
            ends = kafka_topics.offsets(self.servers, changelog_topic(app_id))
        except kafka_topics.KafkaTopicsError:  # not created yet: the app is starting
            return 0
        return sum(p.end for p in ends)

    def wait_processed(self, app_id: str, records: int, timeout_s: float = 1800.0) -> float:
        """Wait until the changelog holds ``records`` records; the seconds waited."""
        started = time.monotonic()
        while self.changelog_records(app_id) < records:
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(
                    f"{app_id}: the changelog has {self.changelog_records(app_id)} of {records} "
                    f"records after {timeout_s:.0f}s"
                )
            time.sleep(0.2)
        return time.monotonic() - started


def produce_fast(servers: str, topic: str, records: Iterable[tuple[bytes, bytes]]) -> int:
    """Write ``(key, value)`` records batched (linger 20 ms, 1 MB batches, no compression),
    acknowledged by the broker, partitioned as the Java client does; return the count."""
    from confluent_kafka import KafkaError, Producer

    failures: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": servers,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 1_000_000,
            "on_delivery": on_delivery,
        }
    )
    count = 0
    for key, value in records:
        while True:
            try:
                producer.produce(topic, value, key)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        count += 1
        if count % 20_000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    if left or failures:
        raise kafka_topics.KafkaTopicsError(
            f"producing to {topic!r}: {left} of {count} records not acknowledged; "
            f"errors: {failures[:5]}"
        )
    return count


@contextmanager
def kafka_world(work: Path, applications: Iterable[str]) -> Iterator[KafkaWorld]:
    """The broker (its data under ``work/broker``) and the local registry (``work/state``)
    with the ``applications``' changelog topics as Kafka Streams streams, stopped on exit;
    ``work`` must be empty or new."""
    work = work.resolve()
    apps = tuple(applications)
    changelogs = tuple(changelog_topic(app_id) for app_id in apps)
    local = LocalRuntime(home=work / "state", in_memory=True, kafka_streams=changelogs)
    with KafkaBroker(work / "broker") as broker, local as runtime:
        clock = ManualClock(datetime.now(UTC))
        rt = replace(runtime, clock=clock)
        use_runtime(rt)
        router = Router(rt.store, HANDLERS, rt.layouts)
        world = KafkaWorld(
            broker,
            Snapledger(InProcess()),
            local.store_uri,
            router,
            clock,
            work,
            endpoint=str(local.endpoint),
            home=local.home,
            applications=apps,
        )
        try:
            yield world
        finally:  # an instance a failed step left running
            for app in world.apps:
                app.stop(kill=True)
