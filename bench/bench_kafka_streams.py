"""Kafka Streams benchmark (issue 38): booting an instance from snapledger's snapshots vs by
replaying the changelog, and the application's throughput while snapshots are made.

The real Kafka 4.4.0 broker and the Kafka Streams application of ``kafka/app`` on this
machine, the local registry (``snapledger.local.kafka_world``). One run, same data; ratios
only, each against a baseline measured in the same run. The registry applies the
kafka-streams layout to every application's changelog (``_applications``), as a deployment
with ``SNAPLEDGER_KAFKA_STREAMS_STREAMS`` does: each snapshot is registered through its
checks (runs saved before 2026-11-29 registered them as native snapshots).

Boot, for each size in ``KEYS`` (the store holds that many keys: one order per distinct
customer id, all produced before the application starts): instance A processes them; every
partition is snapshotted while A runs; then 1% more orders (``TAIL_SHARE``, updates of
existing keys) are processed and A stops. (a) B: ``StoreSeeder.seed`` of every task (the boot
procedure, docs/kafka-streams.md "Which tasks an instance seeds") into an empty state dir,
then start, timed to RUNNING; (b) C: start on an empty state dir (the whole changelog
replayed), timed to RUNNING. ``boot_ratio`` = a / b; ``restored_at_boot`` (B's ``RESTORED``
counts) vs ``written_after_snapshot`` (changelog records past the snapshots' offsets): must
be <=. ``boot_snapshot_seed_half_s``: a seed of half the tasks into another empty state dir
(not started), beside B's seed of all of them: what seeding every task costs in time.
The figure judged (issue 43) is how boot grows with the store, bench/kafka_boot_growth.py:
``boot_growth_ratio`` = (a at 5M keys - a at 1M) / (b at 5M - b at 1M), target <= 0.1,
moonshot 0.05, with ``tail_bound_held`` (the tail bound at every size). The 20M size is
where a replay should take several times an instance's fixed start (about 19 s at the 5M
run's 1.06M records/s; not run yet: it needs roughly 4 times the 5M run's time and disk).
``empty_boot_s`` is the start to RUNNING of an instance with nothing to restore (an empty
input topic), the median of ``EMPTY_BOOTS`` (the first also warms the file cache): the JVM
start, the clients, the group join and the tasks' start that every boot pays;
``boot_floor_ratio`` = ``empty_boot_s`` / b: the ratio a boot from a snapshot would have if it
cost no more than that. The empty boots run first, with colder caches than B's and C's, so B
may beat it.

Throughput: ``THROUGHPUT_RECORDS`` orders on a topic of their own, processed from the start
by a new instance (a new application id) per trial, timed from RUNNING until its changelog
holds one record per order. For each snapshot interval T of ``SNAPSHOT_INTERVALS_S``,
``TRIALS`` pairs of a trial without and one with snapshots, in alternating order. With
snapshots, the sidecar runs beside the instance in a process of its own
(bench/kafka_sidecar.py: ``SnapshotSidecar``, as ``kafka-streams snapshot --every-seconds T``
runs it) at CPU priority ``nice -n SIDECAR_NICE``, as a sidecar sharing the application's
host should run; it snapshots each partition whose changelog grew every T seconds.
``every_{T}s.ratio_*`` is (with / without) per pair: median, min, max;
``every_{T}s.snapshots_made`` the partition snapshots each "with" trial registered while it
ran.

``python -m bench --only kafka_streams`` (``KAFKA_BENCH_KEYS=1000000,5000000,20000000`` and
``KAFKA_BENCH_THROUGHPUT_RECORDS`` set the sizes; 0 records: no throughput trials). The
saved run: docs/bench/kafka-streams.json.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.kafka_boot_growth import growth_figures
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import STORE, changelog_topic
from snapledger.local.kafka_world import PARTITIONS, KafkaWorld, kafka_world, produce_fast

KEYS = tuple(
    int(k) for k in os.environ.get("KAFKA_BENCH_KEYS", "1000000,5000000,20000000").split(",")
)
#: Orders per throughput trial: about 40 s at the ~120,000 orders/s one instance processes here,
#: so that a 15 s interval makes snapshots during the trial.
THROUGHPUT_RECORDS = int(os.environ.get("KAFKA_BENCH_THROUGHPUT_RECORDS", "4800000"))
TAIL_SHARE = 0.01
TRIALS = 3
#: Boots of an instance with nothing to restore (``empty_boot_s``: their median).
EMPTY_BOOTS = 3
#: While a throughput trial runs with snapshots: the sidecar's schedules (a partition whose
#: changelog grew is snapshotted this many seconds after its last snapshot) and CPU priority.
SNAPSHOT_INTERVALS_S = (5, 15)
SIDECAR_NICE = 19
#: The layout every snapshot the bench makes is registered through.
KAFKA_STREAMS = "kafka-streams"


def _orders(count: int, start: int = 0) -> Any:
    return ((f"k{i:09d}".encode(), b"1") for i in range(start, start + count))


def _boot_figures(world: KafkaWorld, keys: int, empty_boot_s: float) -> dict[str, object]:
    app_id, topic, out = f"boot-{keys}", f"boot-in-{keys}", f"boot-out-{keys}"
    kafka_topics.create_topics(world.servers, [topic, out], partitions=PARTITIONS)
    started = time.perf_counter()
    produce_fast(world.servers, topic, _orders(keys))
    produce_s = time.perf_counter() - started
    a = world.app(app_id, f"a-{keys}", topic, out).start()
    first_s = world.wait_processed(app_id, keys)
    started = time.perf_counter()
    answered = len(world.registrations)
    made = world.snapshotter(app_id).snapshot(work_dir=world.work)
    snapshot_s = time.perf_counter() - started
    registered = world.registrations[answered:]
    if len(registered) != PARTITIONS:
        raise RuntimeError(f"{len(registered)} registrations answered for {PARTITIONS} snapshots")
    _checked_by_the_layout(registered, f"{app_id}'s")
    lsns = {p.partition: p.written.lsn for p in made if p.written is not None}
    if sorted(lsns) != list(range(PARTITIONS)):
        raise RuntimeError(f"not every partition was snapshotted: {sorted(lsns)}")
    tail = max(1, int(keys * TAIL_SHARE))
    produce_fast(world.servers, topic, _orders(tail, start=keys // 2))
    world.wait_processed(app_id, keys + tail)
    a.stop()
    ends = {
        p.partition: p.end for p in kafka_topics.offsets(world.servers, changelog_topic(app_id))
    }
    after = sum(ends[p] - (lsns[p] + 1) for p in range(PARTITIONS))
    b = world.boot(app_id, f"b-{keys}", topic, out, seed=True)
    b.app.stop()
    started = time.perf_counter()
    half = [TaskId(0, p) for p in range(PARTITIONS // 2)]
    world.seeder(app_id).seed(world.work / "state-dirs" / f"half-{keys}", half)
    seed_half_s = time.perf_counter() - started
    c = world.boot(app_id, f"c-{keys}", topic, out, seed=False)
    c.app.stop()
    return {
        "keys": keys,
        "produce_s": round(produce_s, 2),
        "first_processing_s": round(first_s, 2),
        "snapshot_all_partitions_s": round(snapshot_s, 2),
        "snapshot_bytes": sum(f.size for p in made if p.written for f in p.written.files),
        "boot_snapshot_s": round(b.total_s, 2),
        "boot_snapshot_seed_s": round(b.seed_s, 2),
        "boot_snapshot_seed_half_s": round(seed_half_s, 2),
        "boot_snapshot_start_s": round(b.start_s, 2),
        "boot_replay_s": round(c.total_s, 2),
        "boot_ratio": round(b.total_s / c.total_s, 4),
        "boot_floor_ratio": round(empty_boot_s / c.total_s, 4),
        "restored_at_boot": b.restored,
        "written_after_snapshot": after,
        "replay_restored": c.restored,
        "tasks_seeded": sum(t.outcome == "seeded" for t in b.seeded),
    }


def _applications(keys: tuple[int, ...], throughput_records: int) -> tuple[str, ...]:
    """Every application id a run starts (the registry applies the kafka-streams layout to
    their changelogs): the empty boots', one per size, one per throughput trial."""
    trials = len(SNAPSHOT_INTERVALS_S) * TRIALS * 2 if throughput_records else 0
    return ("empty", *(f"boot-{k}" for k in keys), *(f"tp-{n}" for n in range(trials)))


def _trial(
    world: KafkaWorld, n: int, topic: str, records: int, *, interval: int | None
) -> tuple[float, int]:
    """Records per second one new instance processes ``topic``'s orders at; and the
    snapshots the sidecar registered meanwhile, snapshotting every ``interval`` seconds
    (None: no sidecar, 0)."""
    app_id = f"tp-{n}"
    # the sidecar first, as a sidecar container starts: it waits for the changelog
    sidecar = None if interval is None else _start_sidecar(world, app_id, interval)
    ended = float("inf")
    try:
        app = world.app(app_id, app_id, topic, "tp-out").start()
        started = time.perf_counter()
        try:
            world.wait_processed(app_id, records)
            seconds = time.perf_counter() - started
            ended = time.time()
        finally:
            app.stop()
    finally:
        made = _stop_sidecar(sidecar, ended) if sidecar is not None else 0
    return records / seconds, made


def _start_sidecar(world: KafkaWorld, app_id: str, interval: int) -> subprocess.Popen[str]:
    """The sidecar (bench/kafka_sidecar.py) at ``SIDECAR_NICE``, polling every second,
    snapshotting a partition every ``interval`` seconds while its changelog grows; once
    it has started (its imports and the registry joined)."""
    command = [
        *(["nice", "-n", str(SIDECAR_NICE)] if SIDECAR_NICE else []),
        sys.executable,
        "-m",
        "bench.kafka_sidecar",
        "--endpoint",
        world.endpoint,
        "--home",
        str(world.home),
        "--servers",
        world.servers,
        "--application-id",
        app_id,
        "--store",
        STORE,
        "--every-seconds",
        str(interval),
        "--work",
        str(world.work / "sidecar" / app_id),
    ]
    with (world.work / "logs" / f"{app_id}-sidecar.log").open("w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    if ready != "READY":
        process.kill()
        raise RuntimeError(f"the sidecar did not start (it printed {ready!r}); its log: {log.name}")
    return process


def _stop_sidecar(process: subprocess.Popen[str], until: float) -> int:
    """SIGTERM (it finishes the run in flight); the snapshots it registered by ``until``
    (a ``time.time()``)."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=600)
    lines = out.splitlines()
    if process.returncode != 0:
        raise RuntimeError(f"the sidecar exited {process.returncode}; printed {lines[:5]}")
    made = [json.loads(line) for line in lines if line.startswith("{")]
    _checked_by_the_layout(made, "the sidecar's")
    return sum(1 for snapshot in made if snapshot["at"] <= until)


def _checked_by_the_layout(registered: list[dict[str, Any]], whose: str) -> None:
    """Every registration was checked by the kafka-streams layout (the registry applies
    it to the bench's changelogs), or the run stops saying which layout was used."""
    others = {r.get("layout") for r in registered} - {KAFKA_STREAMS}
    if others:
        raise RuntimeError(f"{whose} snapshots were checked by {others}, not {KAFKA_STREAMS}")


def _throughput_figures(world: KafkaWorld, records: int) -> dict[str, object]:
    topic = "tp-in"
    kafka_topics.create_topics(world.servers, [topic, "tp-out"], partitions=PARTITIONS)
    produce_fast(world.servers, topic, _orders(records))
    figures: dict[str, object] = {
        "throughput_records": records,
        "throughput_sidecar_nice": SIDECAR_NICE,
    }
    trials = itertools.count()
    for interval in SNAPSHOT_INTERVALS_S:
        without, with_, made_counts, ratios = [], [], [], []
        for pair in range(TRIALS):
            # alternately without first and with first: a drift of the machine's speed
            # over the run counts against both sides alike
            order = (False, True) if pair % 2 == 0 else (True, False)
            done = {
                snapshots: _trial(
                    world, next(trials), topic, records, interval=interval if snapshots else None
                )
                for snapshots in order
            }
            (base, _), (loaded, made) = done[False], done[True]
            without.append(round(base))
            with_.append(round(loaded))
            made_counts.append(made)
            ratios.append(round(loaded / base, 3))
        figures.update(
            {
                f"every_{interval}s.without_rps": without,
                f"every_{interval}s.with_rps": with_,
                f"every_{interval}s.snapshots_made": made_counts,
                f"every_{interval}s.ratios": ratios,
                f"every_{interval}s.ratio_median": statistics.median(ratios),
                f"every_{interval}s.ratio_min": min(ratios),
                f"every_{interval}s.ratio_max": max(ratios),
            }
        )
    return figures


def measure(work: Path, keys: tuple[int, ...], throughput_records: int) -> dict[str, object]:
    shutil.rmtree(work, ignore_errors=True)
    figures: dict[str, object] = {}
    with kafka_world(work, _applications(keys, throughput_records)) as world:
        kafka_topics.create_topics(world.servers, ["empty-in", "empty-out"], partitions=PARTITIONS)
        empty = []
        for n in range(EMPTY_BOOTS):
            boot = world.boot("empty", f"empty-{n}", "empty-in", "empty-out", seed=False)
            boot.app.stop()
            empty.append(round(boot.total_s, 2))
        empty_boot = statistics.median(empty)
        figures["empty_boots_s"] = empty
        figures["empty_boot_s"] = empty_boot
        for size in keys:
            for name, value in _boot_figures(world, size, empty_boot).items():
                figures[f"keys_{size}.{name}"] = value
        figures.update(growth_figures(figures, keys))
        if throughput_records:  # 0: the boot figures alone
            figures.update(_throughput_figures(world, throughput_records))
    return figures


def run(config: Any) -> dict[str, object]:
    return measure(Path(config.workdir) / "kafka-streams", KEYS, THROUGHPUT_RECORDS)
