"""Base snapshots: read a committed snapshot's manifest and its rows.

A base is trusted only as far as its manifest says: the manifest must match the prefix
it sits in, every file it lists must be present with the stated size (one listing), and
be a Parquet file of the kv-parquet columns (its footer; ``jobs.verify``). The stated
checksums are checked by the job while it runs (``ChecksumVerification``).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from jobs.errors import SnapshotError
from jobs.layout import MANIFEST_NAME, snapshot_location
from jobs.schema import STATE_COLUMNS, STATE_SCHEMA
from jobs.storage import ObjectStore
from jobs.verify import BaseFile, check_kv_schema, stated_checksum

_FOOTER_THREADS = 8  # footers read at once: each is one or two positioned reads
KV_PARQUET = "kv-parquet"  # a manifest without ``format`` is one


@dataclass(frozen=True, slots=True)
class BaseSnapshot:
    """A committed snapshot a job starts from."""

    partition: int
    prefix: str
    snapshot_id: str
    lsn: int
    files: tuple[BaseFile, ...]
    row_count: int
    offsets: dict[str, int] | None = None  # the producer's input positions, as written

    @property
    def file_keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.files)


def load_base(store: ObjectStore, stream: str, partition: int, prefix: str) -> BaseSnapshot:
    """Read and check the manifest under ``prefix``; raises SnapshotError naming the problem."""
    location = snapshot_location(prefix)
    if location is None or (location.stream, location.partition) != (stream, partition):
        raise SnapshotError(f"{prefix}: not a snapshot prefix of {stream} partition {partition}")
    lsn, snapshot_id = location.lsn, location.snapshot_id
    listing = {f.key: f.size for f in store.list_files(prefix)}
    manifest_key = prefix + MANIFEST_NAME
    if manifest_key not in listing:
        raise SnapshotError(f"{manifest_key}: missing; the snapshot was never committed")
    try:
        manifest = json.loads(store.read_bytes(manifest_key))
        expected = {
            "stream": stream,
            "partition": partition,
            "lsn": lsn,
            "snapshot_id": snapshot_id,
        }
        wrong = [k for k, v in expected.items() if manifest.get(k) != v]
        files = [
            (str(f["path"]), int(f["size"]), f.get("rows"), f.get("checksum"))
            for f in manifest["files"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotError(f"{manifest_key}: not a readable manifest ({exc})") from None
    if wrong:
        raise SnapshotError(f"{manifest_key}: {', '.join(wrong)} disagree with the prefix")
    snapshot_format = manifest.get("format", KV_PARQUET)
    if snapshot_format != KV_PARQUET:
        raise SnapshotError(
            f"{manifest_key}: format is {snapshot_format!r}; jobs read only {KV_PARQUET!r} "
            "snapshots (Parquet files of key, value, lsn). Start from a kv-parquet snapshot "
            "of this partition (restore --snapshot-id ...) or bootstrap from the changelog."
        )
    for path, size, _, _ in files:
        stored = listing.get(prefix + path)
        if stored != size:
            found = "missing" if stored is None else f"{stored} bytes"
            raise SnapshotError(f"{prefix}{path}: manifest says {size} bytes, found {found}")
    base_files = tuple(
        BaseFile(prefix + path, size, None if checksum is None else str(checksum))
        for path, size, _, checksum in files
    )
    for file in base_files:
        stated_checksum(file)  # readable, or the job stops here
    with ThreadPoolExecutor(max_workers=_FOOTER_THREADS) as pool:
        for _ in pool.map(lambda file: check_kv_schema(store, file), base_files):
            pass
    row_count = manifest.get("row_count")
    if row_count is None:
        row_count = sum(int(rows or 0) for _, _, rows, _ in files)
    return BaseSnapshot(
        partition=partition,
        prefix=prefix,
        snapshot_id=snapshot_id,
        lsn=lsn,
        files=base_files,
        row_count=int(row_count),
        offsets=manifest.get("offsets"),
    )


def read_base_rows(spark: SparkSession, store: ObjectStore, base: BaseSnapshot) -> DataFrame:
    """The rows of ``base`` (which must have files): ``key, value, lsn``."""
    return (
        spark.read.schema(STATE_SCHEMA)
        .parquet(*(store.uri(key) for key in base.file_keys))
        .selectExpr(*STATE_COLUMNS)
    )
