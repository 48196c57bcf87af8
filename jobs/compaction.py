"""The one compaction core: state ⊕ changes → the last put per key, deletes dropped.

The result comes clustered for writing: one Spark partition per lineage partition (by
construction in the merge, by routing.py's choice of task count in the join), so the
writer only sorts within partitions. Two physical formulations give the same rows; the
core picks by the sizes it is given.

**Broadcast winners, then a join** (many changes per state row: a bootstrap, a long
backlog). Each key's winning LSN comes from a hash aggregation over narrow rows (``key,
lsn``: fixed-width buffers, map-side partial aggregation); the winners are broadcast, and
the put rows carrying their key's winning LSN are kept by a map-side join, so the wide
rows are shuffled only once they have won. A base snapshot is never aggregated: it holds
one row per key, older than every change, so its row survives exactly when no change
touches its key; without a base, the lookup holds only (partition, winning LSN), for a
semi join on fixed-width keys. This costs less than ``groupBy + max(struct(lsn, op,
value))`` or a window ``row_number`` over the wide rows (docs/jobs.md, "Measurements").
When the change count alone cannot show that the winners fit the driver's broadcast
budget, they are counted first, so that they are still broadcast instead of joined by two
wide shuffles (a sort-merge join).

**Merge into the state** (at most one change per state row: a restore or a compaction
soon after its base; or winners too many to broadcast). The snapshot's rows are nearly
all survivors, and the changes are few, so each lineage partition's snapshot and changes
are read by one task (coalesce: no shuffle at all), whose one sort by (key, LSN
descending) serves both the choice of each key's last record (a window's first row) and
the output order; the snapshot being sorted already, that sort mostly merges the changes
into it. This saves the winners' own aggregation and broadcast, and a shuffle by
partition (docs/jobs.md, "Measurements"). A partition holding more than a core's share of the
job's rows is split into key ranges instead, one task each (jobs/split.py: one range
shuffle of that partition's rows), so that it does not keep one core busy while the
others wait; its ranges come in key order, so its files still form one sorted run.

LSNs are unique within a partition (validation checks the changelog), so a winning
(partition, LSN) names exactly one change row, and every change is newer than the state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.frames import union_all
from jobs.routing import shuffle_partitions_for
from jobs.schema import OP_PUT, STATE_COLUMNS

STATE_OUTPUT_COLUMNS = ("partition", *STATE_COLUMNS)
STATE_OUTPUT_TYPE = "partition int, key string, value binary, lsn long"
CHANGE_COLUMNS = (*STATE_COLUMNS, "op")
# Frames are built from SQL text: one py4j call per expression list, where Columns built
# from functions cost one call per function and operand (docs/jobs.md, "Measurements").
_NEWEST_FIRST = "row_number() OVER (PARTITION BY key ORDER BY lsn DESC)"
# Broadcast winners cost about 200 bytes each on the driver while it collects them and
# builds the hash relation; a budget of one winner per kilobyte of heap keeps that to a
# fifth of it (2 GiB: 2M winners; EMR Serverless's default 14 GiB driver: 14M).
HEAP_BYTES_PER_BROADCAST_WINNER = 1024
_BRANCH_THREADS = 4
# Merge changes into the state when there are at most this many per state row.
MERGE_MAX_CHANGES_PER_STATE_ROW = 1.0


@dataclass(frozen=True)
class CompactedState:
    """The compacted rows, ``partition, key, value, lsn``, one Spark partition per lineage
    partition (or per key range of one: jobs/split.py), its rows in key order; and, where
    it is known which Spark partition holds which lineage partition, that map: Spark
    partition i holds ``task_partitions[i]`` (the merge's union keeps its branches'
    order), so the writer needs no partitioned write, and the rows carry no ``partition``
    column (without it, the merge's branches share their generated code). None for the
    join, whose shuffle decides, and for a split merge."""

    frame: DataFrame
    task_partitions: tuple[int, ...] | None


@contextmanager
def compacted(
    spark: SparkSession,
    states: Mapping[int, DataFrame],
    changes: Mapping[int, DataFrame],
    *,
    partitions: Sequence[int],
    changes_in: int,
    state_rows: int,
    broadcast_max_rows: int | None = None,
    merge_max_changes_per_state_row: float = MERGE_MAX_CHANGES_PER_STATE_ROW,
    merge_inputs: Mapping[int, DataFrame] | None = None,
    merge_ranges: Mapping[int, int] | None = None,
) -> Iterator[CompactedState]:
    """``partition, key, value, lsn``: per partition and key, the last put, if no delete
    came after it; one Spark partition per lineage partition of ``partitions``, its rows
    in key order (the writer relies on both and sorts nothing). Use it
    inside the block: what it cached on the way is released on leaving.

    ``states`` maps a partition to its base state, ``key, value, lsn`` (one row per key: a
    snapshot; a partition without one starts empty); ``changes`` maps a partition to its
    change records, ``key, value, lsn, op``, every LSN above its state's. ``changes_in``
    (the number of change records, or an upper bound) and ``state_rows`` (the states' row
    count) choose the formulation; ``broadcast_max_rows`` defaults to the driver heap's
    budget. ``merge_inputs`` may give, for a partition with both, its state and changes
    in one frame of ``key, value, lsn, op`` (the state's rows as puts) read by one scan:
    the merge then reads that in place of the two (half the scans to plan and start),
    which ``states`` and ``changes`` may then leave out, when ``merges_into_state``.
    ``merge_ranges`` gives, for a partition the merge splits, its number of key ranges
    (jobs/split.py; absent or 1: one task).
    """
    ranges = merge_ranges or {}
    merged = merge_inputs or {}
    no_changes = not changes and not merged  # whatever the bound ``changes_in`` says
    if no_changes or merges_into_state(changes_in, state_rows, merge_max_changes_per_state_row):
        yield _merge_into_state(spark, states, changes, merged, partitions, ranges=ranges)
        return
    apart = [p for p in merged if p not in states or p not in changes]
    if apart:
        raise ValueError(f"partitions {apart}: joining needs their state and changes apart")
    budget = broadcast_budget_rows(spark) if broadcast_max_rows is None else broadcast_max_rows
    all_changes = _with_partition(changes, partitions)
    winners = all_changes.groupBy("partition", "key").agg(F.expr("max(lsn) AS winning_lsn"))
    tasks = shuffle_partitions_for(partitions)
    if changes_in <= budget:  # there are no more winners than changes
        yield CompactedState(
            _join_broadcast_winners(states, all_changes, winners, partitions, tasks), None
        )
        return
    # The records alone cannot tell: count the winners (keys are usually written many
    # times), keeping them for the join if they are few enough to broadcast.
    winners = winners.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if winners.count() <= budget:
            yield CompactedState(
                _join_broadcast_winners(states, all_changes, winners, partitions, tasks), None
            )
        else:
            winners.unpersist()  # not needed by the merge: free its memory for the sort
            yield _merge_into_state(spark, states, changes, merged, partitions, ranges=ranges)
    finally:
        winners.unpersist()


def merges_into_state(
    changes_in: int,
    state_rows: int,
    merge_max_changes_per_state_row: float = MERGE_MAX_CHANGES_PER_STATE_ROW,
) -> bool:
    """Whether ``compacted`` merges the changes into the state (rather than joining
    broadcast winners first): no changes, or few enough per state row."""
    if changes_in == 0:
        return True
    return state_rows > 0 and changes_in <= state_rows * merge_max_changes_per_state_row


def broadcast_budget_rows(spark: SparkSession) -> int:
    """How many winners this driver can broadcast (see HEAP_BYTES_PER_BROADCAST_WINNER)."""
    heap = int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory())  # type: ignore[union-attr]
    return heap // HEAP_BYTES_PER_BROADCAST_WINNER


def _merge_into_state(
    spark: SparkSession,
    states: Mapping[int, DataFrame],
    changes: Mapping[int, DataFrame],
    merge_inputs: Mapping[int, DataFrame],
    partitions: Sequence[int],
    *,
    ranges: Mapping[int, int],
) -> CompactedState:
    # A split partition's ranges are as many tasks as its range partitioning made (fewer
    # than asked when its keys are few): the partitioned write places them, by the
    # partition column, in task order, which is key order.
    tagged = any(ranges.get(p, 1) > 1 for p in partitions)

    def branch(partition: int) -> DataFrame | None:
        split = ranges.get(partition, 1)
        if partition in merge_inputs:  # the state's rows come as puts among the changes,
            # all older than every change: the window treats them alike
            state, partition_changes = None, merge_inputs[partition]
        else:
            state, partition_changes = states.get(partition), changes.get(partition)
        rows = _merged_partition(state, partition_changes, split)
        if rows is None or not tagged:
            return rows
        return rows.selectExpr(f"{partition:d} AS partition", *STATE_COLUMNS)

    # Each branch costs py4j round trips and an analysis in the JVM: built several at once.
    with ThreadPoolExecutor(max_workers=_BRANCH_THREADS) as pool:
        branches = [
            (p, frame) for p, frame in zip(partitions, pool.map(branch, partitions), strict=True)
        ]
    merged = [(p, frame) for p, frame in branches if frame is not None]
    union = union_all([frame for _, frame in merged])
    if union is None:
        return CompactedState(spark.createDataFrame([], STATE_OUTPUT_TYPE), None)
    if tagged:
        return CompactedState(union, None)
    return CompactedState(union, tuple(p for p, _ in merged))


def _merged_partition(
    state: DataFrame | None, changes: DataFrame | None, split: int = 1
) -> DataFrame | None:
    """``key, value, lsn``: one partition's last put per key, in key order."""
    # The partition's state and changes are read by one task (coalesce: no shuffle), whose
    # one sort by (key, LSN descending) serves both the choice of each key's last record
    # (a window's first row) and the output order. The snapshot is already sorted by key,
    # so the sort mostly merges the changes into it. A split partition (jobs/split.py) is
    # shuffled into ``split`` key ranges instead, one task each, in key order: the range
    # partitioning clusters each key in one task, as the window needs, so each range's
    # sort does the same work on its share of the rows.
    inputs = []
    if state is not None:
        inputs.append(state.selectExpr(*STATE_COLUMNS, f"'{OP_PUT}' AS op"))
    if changes is not None:
        inputs.append(changes.selectExpr(*CHANGE_COLUMNS))
    rows = union_all(inputs)
    if rows is None:
        return None
    last = rows.repartitionByRange(split, "key") if split > 1 else rows.coalesce(1)
    if changes is not None:
        last = last.selectExpr("*", f"{_NEWEST_FIRST} AS recency").where(
            f"recency = 1 AND op = '{OP_PUT}'"
        )
    else:  # a snapshot alone is one row per key; its files are read in any order
        last = last.sortWithinPartitions("key")
    # No partition literal here: branches that differ only in it would each get their
    # own generated classes, compiled by Janino and then by the JIT once per partition.
    return last.selectExpr(*STATE_COLUMNS)


def _join_broadcast_winners(
    states: Mapping[int, DataFrame],
    changes: DataFrame,
    winners: DataFrame,
    partitions: Sequence[int],
    tasks: int,
) -> DataFrame:
    # The lookup travels to every task, so the wide rows are not shuffled to meet it.
    puts = changes.where(f"op = '{OP_PUT}'")
    if not states:
        # A winning (partition, LSN) names one change row, so the lookup needs no keys:
        # fixed-width hashing and a smaller broadcast.
        winning = F.broadcast(winners.selectExpr("partition", "winning_lsn AS lsn"))
        changed = puts.join(winning, ["partition", "lsn"], "left_semi")
        return _by_partition_in_key_order(changed.selectExpr(*STATE_OUTPUT_COLUMNS), tasks)
    # One lookup by (partition, key) serves both joins below, so Spark builds it once.
    lookup = F.broadcast(winners)
    changed = (
        puts.join(lookup, ["partition", "key"], "inner")
        .where("lsn = winning_lsn")
        .selectExpr(*STATE_OUTPUT_COLUMNS)
    )
    if states:
        # The snapshot's row survives exactly when the changes never touch its key (a left
        # join + null test rather than an anti-join, which would be pushed below the union).
        kept = (
            _with_partition(states, partitions)
            .join(lookup, ["partition", "key"], "left")
            .where("winning_lsn IS NULL")
            .selectExpr(*STATE_OUTPUT_COLUMNS)
        )
        changed = kept.unionByName(changed)
    return _by_partition_in_key_order(changed, tasks)


def _by_partition_in_key_order(frame: DataFrame, tasks: int) -> DataFrame:
    return frame.repartition(tasks, "partition").sortWithinPartitions("key")


def _with_partition(frames: Mapping[int, DataFrame], partitions: Sequence[int]) -> DataFrame:
    """One frame of every partition's rows, each tagged with its ``partition``."""
    tagged = [frames[p].selectExpr(f"{p:d} AS partition", "*") for p in partitions if p in frames]
    combined = union_all(tagged)
    if combined is None:
        raise ValueError("no partition has rows")
    return combined
