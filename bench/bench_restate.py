"""Restate benchmark (issue 28): the requests snapledger makes for a Restate cluster's
snapshots, against floors derived from the APIs' limits, and the time from a damaged
latest to the partition serving again.

Runs against DynamoDB Local (the real engine) and a ``file://`` store counting the requests
S3 would bill (``RestateCountingStore``: the GC bench's counts, a listing per 1,000 keys and
a DeleteObjects per 1,000 keys, plus every GET, ranged GET and conditional PUT by kind).
Request counts are exact (no timing), so one run of each size is the measurement.

Registration: requests per registered Restate snapshot at 10 / 100 / 1,000 SSTs.

Each size is a lineage of its own, holding one registered snapshot already; the counted one
is the next, which becomes the lineage's latest (the common path). Its floor, from S3's and
DynamoDB's limits: one GetObject of ``metadata.json``, one ListObjectsV2 per 1,000 objects of
the snapshot's folder (its SSTs and ``metadata.json``), one ranged GetObject of each SST's
tail (``SST_TAIL_BYTES``: the footer check is the least a check without reading data can do
per file), and 2 DynamoDB requests (a read of the lineage's HEAD with the snapshot's item,
one transaction). ``registration_s3_requests_vs_floor`` and
``registration_ddb_requests_vs_floor`` are the worst ratio of the sizes.

GC: requests per expired Restate snapshot at 10 / 100 / 1,000 expired snapshots.

Each size is a stream of its own (its own Restate prefix) of ``size / DUE`` partitions,
each holding ``DUE + MIN_COUNT`` snapshots of ``FILES`` SSTs + ``metadata.json`` and
Restate's ``latest.json`` (naming the newest, retaining all), all past min_age under the
default policy (min_count ``MIN_COUNT``): ``DUE`` are due per partition. GC runs over that
stream. The floor, from S3's batch limits: the due keys, all partitions together, in
⌈keys/1000⌉ DeleteObjects; per partition ⌈objects/1000⌉ listings of the whole partition
(a Restate lineage is listed whole, so Restate's own evictions are seen), one GET of
``latest.json`` and one conditional PUT of it (the deleted snapshots dropped from
``retained_snapshots``), and heal's check of the snapshot it names (one GET of its
``metadata.json`` and one ranged GET per SST: its folder is in the partition's listing).
``gc_s3_requests_vs_floor`` is the worst ratio of the sizes (target ≤ 1.5);
``gc_s3_over_floor_per_partition`` the requests above the floor per partition (the table
splits the requests by kind: which ones are above it).
DynamoDB: ``bench.bench_gc.ddb_requests_floor`` (per partition a Query and the two
transactions of the two-phase protocol, plus a Query per HEAD shard).

Heal: the time from a damaged latest to the partition serving again.

With the real Restate server only (``tests/restate/harness.py``; skipped with a note when
it is not installed): see ``bench.restate_heal``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, ddb_requests_floor
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.layouts import restate
from snapledger.models.ledger import LineageId
from snapledger.ports import MAX_KEYS_PER_REQUEST, ObjectInfo
from snapledger.services.gc import run_gc
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import LayoutCatalog

SST_SIZES = (10, 100, 1_000)
EXPIRED_SIZES = (10, 100, 1_000)
DUE = 10  # due snapshots per partition
MIN_COUNT = 3  # the default policy's
FILES = 2  # SSTs per snapshot (+ metadata.json)
#: DynamoDB's floor for registering a snapshot that becomes latest (as bench_ledger's).
REGISTRATION_DDB_FLOOR = 2
TABLE = "bench-restate"
TARGET = 1.5


class RestateCountingStore(CountingStore):
    """``bench_gc.CountingStore``, also counting each GET by what it reads (``latest.json``,
    ``metadata.json``, an SST's tail), HEADs and writes: every request S3 would bill."""

    def get(self, key: str, **kwargs: Any) -> bytes:
        self._count(_get_kind(key), 1)
        return self.inner.get(key, **kwargs)

    def get_versioned(self, key: str, **kwargs: Any) -> Any:
        self._count(_get_kind(key), 1)
        return self.inner.get_versioned(key, **kwargs)

    def get_tail(self, key: str, length: int) -> bytes:
        self._count("get_tail", 1)
        return self.inner.get_tail(key, length)

    def head(self, key: str) -> ObjectInfo | None:
        self._count("head", 1)
        return self.inner.head(key)

    def stored_checksum(self, key: str, algorithm: str) -> bytes | None:
        self._count("head", 1)
        return self.inner.stored_checksum(key, algorithm)

    def put(self, key: str, data: bytes) -> None:
        self._count("put", 1)
        self.inner.put(key, data)

    def create(self, key: str, data: bytes) -> None:
        self._count("put", 1)
        self.inner.create(key, data)

    def replace(self, key: str, data: bytes, *, if_match: str) -> None:
        self._count("put_if_match", 1)
        self.inner.replace(key, data, if_match=if_match)


def _get_kind(key: str) -> str:
    if key.endswith("/" + restate.LATEST_NAME):
        return "get_latest"
    if key.endswith("/" + restate.METADATA_NAME):
        return "get_metadata"
    return "get"


class DynamoCount:
    """DynamoDB requests made through ``client`` while in a ``with`` block."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    def _count(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    def __enter__(self) -> DynamoCount:
        self.client.meta.events.register("before-call.dynamodb", self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.meta.events.unregister("before-call.dynamodb", self._count)


def registration_floor(ssts: int) -> int:
    """S3's floor for checking a snapshot of ``ssts`` SSTs without reading its data: the
    metadata.json GET, a listing per 1,000 objects of its folder, a ranged GET per SST."""
    return 1 + math.ceil((ssts + 1) / MAX_KEYS_PER_REQUEST) + ssts


def registration_table(
    ledger: DynamoLedger, files: FileObjectStore, sizes: Sequence[int] = SST_SIZES
) -> list[dict[str, object]]:
    """One row per size: the requests registering a snapshot of that many SSTs made."""
    from tests.restate.fixtures import write_restate_snapshot  # the tests' Restate writer

    layouts = LayoutCatalog.of({"restate/registration": "restatereg"})
    prefix = layouts.restate_layouts[0].prefix
    clock = ManualClock()
    rows: list[dict[str, object]] = []
    for partition, ssts in enumerate(sizes):
        first = write_restate_snapshot(files, 100, partition=partition, files=1, prefix=prefix)
        register_manifest(
            first.location.metadata_key, ledger=ledger, store=files, clock=clock, layouts=layouts
        )
        counted = write_restate_snapshot(files, 200, partition=partition, files=ssts, prefix=prefix)
        store = RestateCountingStore(files)
        with DynamoCount(ledger.client) as ddb:
            result = register_manifest(
                counted.location.metadata_key,
                ledger=ledger,
                store=store,
                clock=clock,
                layouts=layouts,
            )
        assert result.outcome is Outcome.BECAME_LATEST, (result.outcome, result.reason)
        s3 = sum(store.requests.values())
        floor = registration_floor(ssts)
        rows.append(
            {
                "ssts": ssts,
                "requests": dict(store.requests),
                "s3_requests": s3,
                "floor": floor,
                "ratio": s3 / floor,
                "ddb_requests": len(ddb.calls),
                "ddb_floor": REGISTRATION_DDB_FLOOR,
                "ddb_ratio": len(ddb.calls) / REGISTRATION_DDB_FLOOR,
            }
        )
    return rows


def gc_floor(partitions: int, due: int, kept: int, files: int) -> tuple[int, int]:
    """(batch floor, heal check floor) of S3 requests for GC over ``partitions`` Restate
    partitions of ``due`` due and ``kept`` kept snapshots of ``files`` SSTs each."""
    objects = files + 1
    deletes = math.ceil(partitions * due * objects / MAX_KEYS_PER_REQUEST)
    whole = (due + kept) * objects + 1  # + latest.json
    listings = partitions * math.ceil(whole / MAX_KEYS_PER_REQUEST)
    pointer = partitions * 2  # latest.json: one GET, one conditional PUT
    heal = partitions * (1 + files)  # the named snapshot's metadata.json, its SSTs' tails
    return deletes + listings + pointer, heal


def _populate_restate(
    ledger: DynamoLedger,
    files: FileObjectStore,
    clock: ManualClock,
    layouts: LayoutCatalog,
    *,
    stream: str,
    partitions: int,
) -> None:
    """``partitions`` Restate partitions of ``stream`` (its prefix in ``layouts``), each of
    ``DUE + MIN_COUNT`` registered snapshots and a latest.json naming the newest."""
    from tests.restate.fixtures import write_latest, write_restate_snapshot

    layout = layouts.restate_for(stream)
    assert layout is not None

    def lineage(partition: int) -> None:
        written = [
            write_restate_snapshot(
                files, 100 * (n + 1), partition=partition, files=FILES, prefix=layout.prefix
            )
            for n in range(DUE + MIN_COUNT)
        ]
        newest_first = written[::-1]
        write_latest(files, newest_first[0], newest_first, prefix=layout.prefix)
        for snapshot in written:
            register_manifest(
                snapshot.location.metadata_key,
                ledger=ledger,
                store=files,
                clock=clock,
                layouts=layouts,
            )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lineage, range(partitions)))


def gc_table(
    ledger: DynamoLedger,
    files: FileObjectStore,
    client: Any,
    sizes: Sequence[int] = EXPIRED_SIZES,
) -> list[dict[str, object]]:
    """One row per size: the requests GC made to delete that many expired snapshots."""
    streams = {size: f"restategc{size}" for size in sizes}
    layouts = LayoutCatalog.of({f"restate/gc-{size}": streams[size] for size in sizes})
    clock = ManualClock()
    for size in sizes:
        assert size % DUE == 0, f"{size} expired snapshots: a multiple of {DUE}"
        _populate_restate(
            ledger, files, clock, layouts, stream=streams[size], partitions=size // DUE
        )
    clock.advance(timedelta(days=3))
    rows: list[dict[str, object]] = []
    for size in sizes:
        partitions = size // DUE
        store = RestateCountingStore(files)
        deps = replace(bench_deps(ledger, store, clock, client), layouts=layouts)
        with DynamoCount(client) as ddb:
            report = run_gc(deps, stream=streams[size])
        counts = report.counts()
        assert report.complete and counts["errors"] == 0, report.errors
        assert counts["snapshots_deleted"] == size, counts
        _check_pruned(ledger, files, layouts, streams[size], partitions)
        batch, heal = gc_floor(partitions, DUE, MIN_COUNT, FILES)
        made = dict(store.requests)
        total = sum(made.values())
        ddb_floor = ddb_requests_floor(partitions, DUE, kept=MIN_COUNT)
        rows.append(
            {
                "expired": size,
                "partitions": partitions,
                "requests": made,
                "s3_requests": total,
                "floor": batch + heal,
                "ratio": total / (batch + heal),
                "heal_floor": heal,
                "over_floor_per_partition": (total - batch - heal) / partitions,
                "per_expired": total / size,
                "ddb_requests": len(ddb.calls),
                "ddb_floor": ddb_floor,
                "ddb_ratio": len(ddb.calls) / ddb_floor,
            }
        )
    return rows


def _check_pruned(
    ledger: DynamoLedger,
    files: FileObjectStore,
    layouts: LayoutCatalog,
    stream: str,
    partitions: int,
) -> None:
    """Each partition's latest.json retains exactly its REGISTERED snapshots after GC."""
    layout = layouts.restate_for(stream)
    assert layout is not None
    for partition in range(partitions):
        raw = files.get(layout.latest_key(partition))
        retained = restate.parse_latest(raw, partition=partition).retained_ids
        page = ledger.list_registered(LineageId(stream=stream, partition=partition), limit=1000)
        live = {record.snapshot_id for record in page.items}
        assert retained == live, (partition, sorted(retained), sorted(live))


def _print_tables(registration: list[dict[str, object]], gc: list[dict[str, object]]) -> None:
    print("   registration: requests per snapshot by SSTs (floor: 1 + ⌈(SSTs+1)/1000⌉ + SSTs)")
    print("       SSTs  S3 (metadata/list/tail/other)   floor  ratio  DynamoDB  floor  ratio")
    for row in registration:
        made: dict[str, int] = row["requests"]  # type: ignore[assignment]
        shown = [made.get(k, 0) for k in ("get_metadata", "list", "get_tail")]
        split = "/".join(str(n) for n in [*shown, sum(made.values()) - sum(shown)])
        print(
            f"   {row['ssts']:>8}  {row['s3_requests']:>6} ({split})  {row['floor']:>6}"
            f"  {row['ratio']:.3f}  {row['ddb_requests']:>8}  {row['ddb_floor']:>5}"
            f"  {row['ddb_ratio']:.3f}"
        )
    kinds = (
        "list",
        "list_dirs",
        "delete",
        "get_latest",
        "put_if_match",
        "get_metadata",
        "get_tail",
    )
    print("   GC: requests by expired snapshots (floor: batch + latest.json GET/PUT + heal check)")
    print(
        "    expired  partitions  S3 (" + "/".join(kinds) + ")  floor  ratio"
        "  over/partition  DynamoDB  floor  ratio"
    )
    for row in gc:
        made = row["requests"]  # type: ignore[assignment]
        split = "/".join(str(made.get(k, 0)) for k in kinds)
        print(
            f"   {row['expired']:>8}  {row['partitions']:>10}  {row['s3_requests']:>5} ({split})"
            f"  {row['floor']:>5}  {row['ratio']:.3f}  {row['over_floor_per_partition']:>14.2f}"
            f"  {row['ddb_requests']:>8}  {row['ddb_floor']:>5}  {row['ddb_ratio']:.3f}"
        )


def requests(
    ledger: DynamoLedger,
    files: FileObjectStore,
    client: Any,
    *,
    sst_sizes: Sequence[int] = SST_SIZES,
    expired_sizes: Sequence[int] = EXPIRED_SIZES,
) -> dict[str, object]:
    """The registration and GC figures (tables included) on ``ledger`` and ``files``."""
    registration = registration_table(ledger, files, sst_sizes)
    gc = gc_table(ledger, files, client, expired_sizes)
    _print_tables(registration, gc)

    def worst(rows: list[dict[str, object]], key: str) -> float:
        return max(float(row[key]) for row in rows)  # type: ignore[arg-type]

    return {
        "registration_s3_requests_vs_floor": worst(registration, "ratio"),
        "registration_ddb_requests_vs_floor": worst(registration, "ddb_ratio"),
        "registration_table": registration,
        "gc_s3_requests_vs_floor": worst(gc, "ratio"),
        "gc_s3_requests_vs_floor_target": TARGET,
        "gc_s3_over_floor_per_partition": worst(gc, "over_floor_per_partition"),
        "gc_s3_requests_per_expired_snapshot": worst(gc, "per_expired"),
        "gc_ddb_requests_vs_floor": worst(gc, "ddb_ratio"),
        "gc_ddb_requests_vs_floor_target": TARGET,
        "gc_table": gc,
    }


def run(config: Any) -> dict[str, object]:
    from bench.restate_heal import heal_figures

    with bench_world(TABLE) as (client, ledger, files, _clock):
        figures = requests(ledger, files, client)
    return {**figures, **heal_figures(config)}
