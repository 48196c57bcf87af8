"""Incremental Kafka Streams snapshots (issue 45): what a pass uploads, what the retained
snapshots hold, and what a pass costs, each against a baseline of the same run.

The real Kafka 4.4.0 broker and the Kafka Streams application of ``kafka/app``, the local
registry (``snapledger.local.kafka_world``) applying the kafka-streams layout. A store of
``KEYS`` keys (one order per customer id) is processed by instance A and every partition
snapshotted (a full first snapshot: no base); then ``PASSES`` passes, each after ``UPDATE_SHARE``
of the keys (spread over the key space) were updated while A runs, snapshot every partition
(``StoreSnapshotter``: each pass references the SSTs of its base it kept). Nothing is
collected meanwhile: every snapshot is retained.

The passes run as the sidecar runs them: each partition's working copy kept between passes
(``keep_dir``) and one resident seeder process (``ResidentSeeder``) catching the stores up.

- ``upload_vs_new_bytes``: bytes of the SSTs the passes uploaded / bytes of the SSTs new since
  the previous snapshot (each partition's SSTs, own and referenced, whose names its previous
  snapshot did not have): the issue's target <= 1.1, "plus the small metadata files", which
  ``upload_all_vs_new_bytes`` counts too (RocksDB's ``CURRENT``/``MANIFEST``/``OPTIONS``,
  rewritten at every flush).
- ``storage_retained_vs_one_full``: bytes under the changelog's snapshots in the store after
  the passes (``PASSES`` + 1 snapshots of every partition) / bytes of one full snapshot (the
  last pass's snapshots' files, own and referenced: the whole store); the issue's
  ``storage_10_vs_one_full`` with ``PASSES`` = 10: target <= 2.
- ``pass_cpu_vs_full_copy``: the median CPU seconds of a pass (this process, its reaped
  children and the resident seeder, read from /proc) / those of one more pass of the same shape
  (the same share of updates first) as a pass ran before the issue: its base downloaded, a
  seeder process of its own, every file uploaded (``incremental=False``); target <= 0.3. Wall
  seconds as information. ``idle_pass_cpu_s``: a pass with nothing new, with the resident
  seeder and with a seeder process of its own (the fixed cost each pays).

``python -m bench --only kafka_incremental`` (``KAFKA_INCREMENTAL_KEYS``, default 1,000,000).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from snapledger.client.storage import open_store
from snapledger.kafka_streams.resident_seeder import ResidentSeeder
from snapledger.kafka_streams.snapshotter import SST_SUFFIX, PartitionSnapshot
from snapledger.local import kafka_topics
from snapledger.local.kafka_app import changelog_topic
from snapledger.local.kafka_world import PARTITIONS, KafkaWorld, kafka_world, produce_fast

KEYS = int(os.environ.get("KAFKA_INCREMENTAL_KEYS", "1000000"))
PASSES = 10
UPDATE_SHARE = 0.01
APP = "incremental"
#: A stride through the key space coprime with any store size used, so each pass's updates
#: are spread over every partition and key range.
_STRIDE = 7919


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_s(seeder: ResidentSeeder) -> float:
    """CPU seconds so far of this process, its reaped children and the resident seeder."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    total = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    if seeder.pid is not None:
        stat = Path(f"/proc/{seeder.pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(stat[11]) + int(stat[12])) / _TICKS  # utime, stime
    return total


def _ssts(written: Any) -> dict[str, int]:
    """A written snapshot's SSTs by name (own and referenced) and their sizes."""
    found = {f.path: f.size for f in written.files if f.path.endswith(SST_SUFFIX)}
    found |= {
        r.path.rpartition("/")[2]: r.size for r in written.references if r.path.endswith(SST_SUFFIX)
    }
    return found


def _pass(
    world: KafkaWorld, seeder: ResidentSeeder, *, sidecar: bool = True
) -> tuple[list[PartitionSnapshot], float, float]:
    """A pass as the sidecar makes it (its copies kept, the resident seeder), or as a pass
    was made before the issue (``sidecar=False``)."""
    snapshotter = world.snapshotter(APP)
    if sidecar:
        snapshotter = replace(snapshotter, keep_dir=world.work / "kept", seeder=seeder)
    else:
        snapshotter = replace(snapshotter, incremental=False)
    cpu, wall = _cpu_s(seeder), time.perf_counter()
    made = snapshotter.snapshot(work_dir=world.work)
    return made, _cpu_s(seeder) - cpu, time.perf_counter() - wall


def _update(world: KafkaWorld, topic: str, keys: int, updates: int, n: int) -> None:
    """Pass ``n``'s updates of ``updates`` keys spread over the key space, processed."""
    start = (n * updates * _STRIDE) % keys
    batch = ((f"k{(start + i * _STRIDE) % keys:09d}".encode(), b"1") for i in range(updates))
    produce_fast(world.servers, topic, batch)
    world.wait_processed(APP, keys + (n + 1) * updates)


def measure(work: Path, keys: int) -> dict[str, object]:
    shutil.rmtree(work, ignore_errors=True)
    updates = max(1, int(keys * UPDATE_SHARE))
    with kafka_world(work, (APP,)) as world, ResidentSeeder() as seeder:
        topic, out = "incremental-in", "incremental-out"
        kafka_topics.create_topics(world.servers, [topic, out], partitions=PARTITIONS)
        produce_fast(world.servers, topic, ((f"k{i:09d}".encode(), b"1") for i in range(keys)))
        a = world.app(APP, "a", topic, out).start()
        world.wait_processed(APP, keys)
        first, _, _ = _pass(world, seeder)
        idle = {"resident_seeder": _pass(world, seeder)[1]}
        idle["own_seeder_process"] = _pass(world, seeder, sidecar=False)[1]
        previous = {p.partition: _ssts(p.written) for p in first if p.written is not None}
        uploaded = uploaded_ssts = new = 0
        cpus, walls = [], []
        whole: dict[int, int] = {}  # each partition's last snapshot: its files, own and referenced
        for n in range(PASSES + 1):
            _update(world, topic, keys, updates, n)
            if n == PASSES:  # the baseline: a pass of the same shape, every file uploaded
                _, full_cpu, full_wall = _pass(world, seeder, sidecar=False)
                break
            made, cpu, wall = _pass(world, seeder)
            cpus.append(cpu)
            walls.append(wall)
            for p in made:
                if p.written is None:
                    continue
                now = _ssts(p.written)
                before = previous.get(p.partition, {})
                new += sum(size for name, size in now.items() if name not in before)
                uploaded += sum(f.size for f in p.written.files)
                uploaded_ssts += sum(f.size for f in p.written.files if f.path.endswith(SST_SUFFIX))
                previous[p.partition] = now
                whole[p.partition] = sum(f.size for f in p.written.files) + sum(
                    r.size for r in p.written.references
                )
            if n == PASSES - 1:  # every snapshot retained: the first and the passes'
                store = open_store(world.root)
                held = sum(o.size for o in store.list(f"snapshots/{changelog_topic(APP)}/"))
        a.stop()
        one_full = sum(whole.values())
    return {
        "keys": keys,
        "passes": PASSES,
        "updates_per_pass": updates,
        "uploaded_bytes": uploaded,
        "uploaded_sst_bytes": uploaded_ssts,
        "new_sst_bytes": new,
        "upload_vs_new_bytes": round(uploaded_ssts / new, 4) if new else None,
        "upload_all_vs_new_bytes": round(uploaded / new, 4) if new else None,
        "one_full_bytes": one_full,
        "retained_bytes": held,
        "storage_retained_vs_one_full": round(held / one_full, 4),
        "pass_cpu_s": [round(c, 2) for c in cpus],
        "idle_pass_cpu_s": {how: round(c, 2) for how, c in idle.items()},
        "pass_wall_s": [round(w, 2) for w in walls],
        "full_copy_cpu_s": round(full_cpu, 2),
        "full_copy_wall_s": round(full_wall, 2),
        "pass_cpu_vs_full_copy": round(statistics.median(cpus) / full_cpu, 4),
        "pass_wall_vs_full_copy": round(statistics.median(walls) / full_wall, 4),
    }


def run(config: Any) -> dict[str, object]:
    return measure(Path(config.workdir) / "kafka-incremental", KEYS)
