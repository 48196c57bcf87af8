"""``make demo-kafka``: a Kafka Streams application's stores snapshotted by snapledger, and a
new instance booted from the snapshots instead of replaying the changelog.

One machine, the application unchanged: the Kafka 4.4.0 broker (KRaft, loopback), the
Kafka Streams application of ``kafka/app`` (totals per customer, store ``totals``), and the
embedded default registry (DynamoDB Local in memory, a ``file://`` store, the functions
in-process: ``make demo``'s):

1. topics with 8 partitions; the first batch of orders produced;
2. instance A runs; three times, while it processes the next batch, every store partition
   is snapshotted from the changelog (``StoreSnapshotter``) and registered, each checked by
   the kafka-streams layout (the registry has the store's changelog as a Kafka Streams
   stream, as ``local up --kafka-streams-stream`` gives it: the answer says which layout
   checked it); more orders after the last snapshots; A stops;
3. instance B boots on an empty state dir seeded from the snapshots (``StoreSeeder``):
   its boot time (seed + start to RUNNING) and the records it restored (at most those
   written after the snapshots);
4. instance C boots on an empty state dir, replaying the whole changelog: its boot time;
   B and C serve the same totals, equal to the sums computed here;
5. GC under a policy (the 2 newest AND none younger than 1 h; the functions' clock moved
   2 h on) with a hold on partition 0's oldest: what it deleted is none a boot would pick
   (a new seed picks what B's picked);
6. a summary: the two boot times and their ratio.

Every check is printed; the exit status is non-zero if one fails. ``--orders`` and
``--customers`` set the size (``make demo-kafka DEMO_ARGS="--orders 1000000"``).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

from snapledger.demos.report import Report
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import changelog_topic
from snapledger.local.kafka_world import PARTITIONS, Boot, KafkaWorld, kafka_world, produce_fast

APP_ID = "demo-totals"
INPUT, OUTPUT = "demo-orders", "demo-totals-output"
ROUNDS = 3  # snapshot rounds while A runs
#: The share of the orders in each batch: the first, one per snapshot round (produced as the
#: round starts: A processes it while the snapshots are made), and the tail after them.
BATCHES = (0.5, 0.1, 0.1, 0.1, 0.2)
MIN_COUNT, MIN_AGE_HOURS = 2, 1
#: The layout the registry checks the store's snapshots by (strategies/kafka_streams.py).
KAFKA_STREAMS = "kafka-streams"


def _checked_by(answers: list[dict[str, object]]) -> str:
    """What registration answered, by outcome and the layout that checked each."""
    counts = Counter(f"{a.get('outcome')} (layout {a.get('layout')})" for a in answers)
    said = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    return f"registered: {said or 'none'}"


def make_orders(seed: int, count: int, customers: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"c{rng.randrange(customers):07d}", rng.randint(-50, 500)) for _ in range(count)]


class KafkaDemo:
    def __init__(self, world: KafkaWorld, orders: int, customers: int) -> None:
        self.world = world
        self.report = Report()
        self.stream = changelog_topic(APP_ID)
        every = make_orders(1, orders, customers)
        cuts = [round(sum(BATCHES[: i + 1]) * orders) for i in range(len(BATCHES))]
        self.batches = [every[a:b] for a, b in zip([0, *cuts[:-1]], cuts, strict=True)]
        self.sums: Counter[str] = Counter()
        for customer, amount in every:
            self.sums[customer] += amount
        self.lsns: dict[int, int] = {}
        self.boots: dict[str, Boot] = {}

    def produce(self, batch: list[tuple[str, int]]) -> None:
        produce_fast(self.world.servers, INPUT, ((c.encode(), str(a).encode()) for c, a in batch))

    def run_and_snapshot(self) -> None:
        world, report = self.world, self.report
        with report.step(f"1. Topics ({PARTITIONS} partitions) and the first orders"):
            kafka_topics.create_topics(world.servers, [INPUT, OUTPUT], partitions=PARTITIONS)
            self.produce(self.batches[0])
            print(f"   {len(self.batches[0]):,} orders produced to {INPUT}", flush=True)
        with report.step("2. Instance A runs; every partition snapshotted while it does"):
            a = world.app(APP_ID, "a", INPUT, OUTPUT).start()
            done = len(self.batches[0])
            world.wait_processed(APP_ID, done)
            print(f"   A is RUNNING and processed {done:,} orders", flush=True)
            snapshotter = world.snapshotter(APP_ID)
            for round_ in range(1, ROUNDS + 1):
                self.produce(self.batches[round_])  # A processes it while the snapshots run
                answered = len(world.registrations)
                made = snapshotter.snapshot(work_dir=world.work)
                written = {p.partition: p.written for p in made if p.written is not None}
                self.lsns.update({p: w.lsn for p, w in written.items()})
                report.check(
                    f"round {round_}: every partition snapshotted while A runs",
                    len(written) == PARTITIONS,
                    f"{sum(p.catch_up.applied for p in made):,} changelog records applied",
                )
                print(f"   {_checked_by(world.registrations[answered:])}", flush=True)
                done += len(self.batches[round_])
                world.wait_processed(APP_ID, done)
            registered = [r for r in world.registrations if r.get("outcome") == "became_latest"]
            report.check(
                "every snapshot registered, checked by the kafka-streams layout",
                len(registered) == len(world.registrations) == ROUNDS * PARTITIONS
                and all(r.get("layout") == KAFKA_STREAMS for r in registered),
                _checked_by(world.registrations),
            )
            self.produce(self.batches[-1])
            done += len(self.batches[-1])
            world.wait_processed(APP_ID, done)
            print(f"   {len(self.batches[-1]):,} more orders processed after them", flush=True)
            latest = {
                p: (world.registry.latest(self.stream, p).get("head") or {}).get("latest_lsn")
                for p in range(PARTITIONS)
            }
            report.check("each partition's latest is its newest snapshot", latest == self.lsns, "")
            a.stop()
            report.check("A stopped cleanly", a.stopped_cleanly(), f"{done:,} orders processed")

    def boot_b_and_c(self) -> None:
        world, report = self.world, self.report
        ends = {p.partition: p.end for p in kafka_topics.offsets(world.servers, self.stream)}
        tail = sum(ends[p] - (self.lsns[p] + 1) for p in range(PARTITIONS))
        total = sum(ends.values())
        expected = dict(self.sums)
        with report.step("3. Instance B boots from the snapshots (seed, then start)"):
            b = self.boots["B"] = world.boot(APP_ID, "b", INPUT, OUTPUT, seed=True)
            for task in b.seeded:
                print(f"   {task.task}: {task.outcome} at offset {task.lsn}", flush=True)
            print(
                f"   boot {b.total_s:.1f}s (seed {b.seed_s:.1f}s + start to RUNNING "
                f"{b.start_s:.1f}s); restored {b.restored:,} changelog records",
                flush=True,
            )
            report.check(
                "B restored at most the records written after the snapshots",
                b.restored <= tail,
                f"{b.restored:,} restored, {tail:,} written after the snapshots",
            )
            served_b = b.app.totals()
            b.app.stop()
        with report.step("4. Instance C boots by replaying the whole changelog"):
            c = self.boots["C"] = world.boot(APP_ID, "c", INPUT, OUTPUT, seed=False)
            print(
                f"   boot {c.total_s:.1f}s (start to RUNNING); restored {c.restored:,} "
                "changelog records",
                flush=True,
            )
            report.check(
                "C restored the whole changelog", c.restored == total, f"{total:,} records"
            )
            served_c = c.app.totals()
            c.app.stop()
            report.check(
                "B and C serve the same totals, equal to the sums of the orders",
                served_b == served_c == expected,
                f"{len(expected):,} customers",
            )

    def retain(self) -> None:
        world, report = self.world, self.report
        with report.step("5. GC: the 2 newest AND none younger than 1 h, a hold; clock +2 h"):
            registry = world.registry
            answer = registry.call(
                "gc",
                {
                    "action": "policy_set",
                    "stream": self.stream,
                    "min_count": MIN_COUNT,
                    "min_age_hours": MIN_AGE_HOURS,
                    "by": "demo",
                },
            )
            report.check("policy set", bool(answer.get("ok")), answer.get("message", ""))
            listed = registry.snapshots(self.stream, 0, limit=ROUNDS).get("snapshots", [])
            oldest = min(listed, key=lambda s: int(s["lsn"]))
            held = registry.call(
                "gc",
                {
                    "action": "hold",
                    "stream": self.stream,
                    "partition": 0,
                    "snapshot_id": oldest["snapshot_id"],
                    "reason": "demo: keep partition 0's oldest",
                    "by": "ops",
                },
            )
            report.check(
                f"hold on {self.stream}/0's oldest",
                bool(held.get("ok")),
                f"offset {oldest['lsn']}",
            )
            world.clock.advance(timedelta(hours=2))
            run = registry.call("gc", {"stream": self.stream})
            lineages = (run.get("report") or {}).get("lineages", [])
            deleted = {d["snapshot_id"] for lin in lineages for d in lin.get("deleted", [])}
            for lineage in lineages:
                print(
                    f"   {lineage['stream']}/{lineage['partition']}: "
                    f"{len(lineage.get('kept', []))} kept, {len(lineage.get('deleted', []))} "
                    "deleted",
                    flush=True,
                )
            report.check(
                "GC deleted the oldest of partitions 1-7, kept the held one",
                len(deleted) == PARTITIONS - 1 and oldest["snapshot_id"] not in deleted,
                f"{len(deleted)} deleted",
            )
            picked_b = {t.task: t.snapshot_id for t in self.boots["B"].seeded}
            report.check(
                "nothing GC deleted is one B's boot picked",
                not deleted & set(picked_b.values()),
                "",
            )
            state = world.work / "state-dirs" / "after-gc"
            again = world.seeder(APP_ID).seed(state)
            report.check(
                "a boot after GC picks the same snapshots as B's",
                {t.task: t.snapshot_id for t in again} == picked_b,
                f"{sum(t.outcome == 'seeded' for t in again)} tasks seeded",
            )

    def summary(self) -> None:
        b, c = self.boots["B"], self.boots["C"]
        print("\nboot                      time  restored")
        print(f"B from the snapshots  {b.total_s:8.1f}s  {b.restored:>8,}")
        print(f"C replaying           {c.total_s:8.1f}s  {c.restored:>8,}")
        print(f"ratio B/C: {b.total_s / c.total_s:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo-kafka", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path("demo-data/kafka"), help="demo folder (wiped)"
    )
    parser.add_argument("--orders", type=int, default=300_000, help="orders produced in all")
    parser.add_argument("--customers", type=int, default=100_000, help="distinct customers")
    args = parser.parse_args(argv)
    if not 200 <= args.orders <= 10_000_000 or not 1 <= args.customers <= args.orders:
        parser.error("need 200 <= --orders <= 10,000,000 and 1 <= --customers <= --orders")
    root = args.root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    print("starting the Kafka broker, DynamoDB Local and the local runtime...", flush=True)
    demo: KafkaDemo | None = None
    try:
        with kafka_world(root, applications=(APP_ID,)) as world:
            print(f"   broker {world.servers}; snapshots in {world.root}", flush=True)
            demo = KafkaDemo(world, args.orders, args.customers)
            demo.run_and_snapshot()
            demo.boot_b_and_c()
            demo.retain()
            demo.summary()
    except KeyboardInterrupt:
        print("\ninterrupted: the broker and DynamoDB Local stopped", file=sys.stderr)
        return 130
    if demo is None:
        print("FAILED: the demo did not start", file=sys.stderr)
        return 1
    return demo.report.exit_status()


if __name__ == "__main__":
    sys.exit(main())
