"""The demo's independent check: a restore must equal a full replay of the changelog.

The replay reads every changelog record of the partition up to the target, keeps the
last record per key with a window ``row_number`` (deliberately not the jobs'
``max(struct(...))`` formulation) and drops deletes; the restore's rows must match it
exactly (key, value and lsn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snapledger.layout import lineage_changelog_prefix, restore_prefix


@dataclass(frozen=True)
class ReplayCheck:
    partition: int
    target_lsn: int
    restored_rows: int
    replayed_rows: int
    differing_rows: int

    @property
    def equal(self) -> bool:
        return self.differing_rows == 0 and self.restored_rows == self.replayed_rows


def check_restore_equals_replay(
    spark: Any, root_uri: str, stream: str, *, partition: int, job_id: str, target_lsn: int
) -> ReplayCheck:
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

    root = root_uri.rstrip("/")
    changes = spark.read.parquet(f"{root}/{lineage_changelog_prefix(stream, partition)}")
    latest_first = Window.partitionBy("key").orderBy(F.col("lsn").desc())
    replay = (
        changes.where(F.col("lsn") <= target_lsn)
        .withColumn("n", F.row_number().over(latest_first))
        .where((F.col("n") == 1) & (F.col("op") == "put"))
        .select("key", "value", "lsn")
    )
    # The folder holds the data files and _restore.json, which Spark skips ('_' prefix).
    restored = spark.read.parquet(f"{root}/{restore_prefix(job_id, partition)}").select(
        "key", "value", "lsn"
    )
    differing = replay.exceptAll(restored).count() + restored.exceptAll(replay).count()
    return ReplayCheck(
        partition=partition,
        target_lsn=target_lsn,
        restored_rows=restored.count(),
        replayed_rows=replay.count(),
        differing_rows=differing,
    )
