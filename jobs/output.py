"""Writing a job's result: data files first, in the flat layout, descriptors last.

Spark writes the whole result once, one task per lineage partition, into a staging
folder. Each lineage partition's files are then published into their final prefix as
``part-00000.parquet``, ``part-00001.parquet``, ... (no ``_SUCCESS``, no ``.crc``; each
created only if absent: jobs/create_only.py), their
sizes, row counts and sha256 checksums are read back from the stored files, and only
when every data file of every partition is in place are the descriptors
(``_manifest.json`` / ``_restore.json``) written: a descriptor's arrival means complete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import DataFrame, DataFrameWriter

from jobs.compaction import CompactedState
from jobs.layout import data_file_name
from jobs.storage import ObjectStore, StoredFile

_STAT_THREADS = 8  # files checksummed at once: each is one streaming read through the JVM


@dataclass(frozen=True, slots=True)
class DataFile:
    """One published data file, as a descriptor lists it."""

    path: str  # relative to the output prefix
    size: int
    rows: int
    checksum: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "rows": self.rows, "checksum": self.checksum}


def write_staged(
    state: CompactedState,
    store: ObjectStore,
    staging: str,
    partitions: Sequence[int],
    max_rows_per_file: int,
) -> dict[int, list[StoredFile]]:
    """Write ``state`` (compaction.py: one Spark partition per lineage partition, in key
    order) without sorting it again; returns each partition's staged files in key order.

    One Spark task per lineage partition writes it as one key-sorted run of files;
    maxRecordsPerFile rolls that run over into c000, c001, ... in order, so within a task
    name order is write order (``part-{task}-{uuid}-c{n}``).
    """

    def writer(frame: DataFrame) -> DataFrameWriter:
        # Keys, values and LSNs of a state are nearly all distinct: dictionaries only cost.
        return frame.write.option("maxRecordsPerFile", max_rows_per_file).option(
            "parquet.enable.dictionary", "false"
        )

    staged: dict[int, list[StoredFile]] = {p: [] for p in partitions}
    if state.task_partitions is not None:
        # Spark partition i holds lineage partition task_partitions[i]: a plain write,
        # whose files name their task, places each file without a partitioned write's
        # per-partition folders and writers (a bare read and write of a few thousand
        # rows: 0.43-0.50 s partitioned into 4 folders, 0.22-0.30 s plain).
        writer(state.frame.drop("partition")).parquet(store.uri(staging))
        for stored in _data_files(store.list_files(staging)):
            task = int(stored.name.split("-", 2)[1])
            if task >= len(state.task_partitions):
                raise RuntimeError(f"{stored.key}: written by task {task}, which holds none")
            staged[state.task_partitions[task]].append(stored)
        _drop_empty_first_file(store, staged, state.task_partitions)
    else:
        # With planned writes off and concurrent writers on (see settings.py) Spark writes
        # the frame in the order it comes rather than sorting it by partition again.
        writer(state.frame).partitionBy("partition").parquet(store.uri(staging))
        for stored in _data_files(store.list_files(staging, recursive=True)):
            folder = stored.key.rpartition("/")[0]
            staged[int(folder.rsplit("partition=", 1)[1])].append(stored)
    return {p: sorted(files, key=lambda f: f.name) for p, files in staged.items()}


def _data_files(files: Sequence[StoredFile]) -> list[StoredFile]:
    """The Parquet data files among a Spark output's (no _SUCCESS, no hidden files)."""
    return [f for f in files if not f.name.startswith(("_", ".")) and f.name.endswith(".parquet")]


def _drop_empty_first_file(
    store: ObjectStore, staged: dict[int, list[StoredFile]], task_partitions: Sequence[int]
) -> None:
    """Spark's task 0 writes a file even when it has no rows (the others write none): a
    partition whose state is empty publishes no file, as with a partitioned write."""
    if not task_partitions:
        return
    first = staged[task_partitions[0]]
    if len(first) == 1 and store.parquet_rows(first[0].key) == 0:
        first.clear()


def publish_files(store: ObjectStore, staged: Sequence[StoredFile], prefix: str) -> list[str]:
    """Publish staged files as ``prefix/part-NNNNN.parquet``, each created only if absent
    (``ObjectStore.publish``); returns the new keys."""
    keys = []
    for index, stored in enumerate(staged):
        key = prefix + data_file_name(index)
        store.publish(stored.key, key)
        keys.append(key)
    return keys


def describe_files(
    store: ObjectStore, keys_by_prefix: Mapping[str, Sequence[str]]
) -> dict[str, list[DataFile]]:
    """Size (one listing per prefix), rows and sha256 of every published file, read back
    from the store, several files at a time."""

    sizes = {f.key: f.size for prefix in keys_by_prefix for f in store.list_files(prefix)}

    def describe(prefix: str, key: str) -> DataFile:
        return DataFile(
            path=key[len(prefix) :],
            size=sizes[key],
            rows=store.parquet_rows(key),
            checksum="sha256:" + store.sha256_hex(key),
        )

    jobs = [(prefix, key) for prefix, keys in keys_by_prefix.items() for key in keys]
    with ThreadPoolExecutor(max_workers=_STAT_THREADS) as pool:
        described = list(pool.map(lambda job: describe(*job), jobs))
    result: dict[str, list[DataFile]] = {prefix: [] for prefix in keys_by_prefix}
    for (prefix, _), data_file in zip(jobs, described, strict=True):
        result[prefix].append(data_file)
    return result


def write_descriptor(store: ObjectStore, key: str, descriptor: Mapping[str, object]) -> None:
    store.write_bytes(key, json.dumps(descriptor, indent=2, sort_keys=True).encode())
