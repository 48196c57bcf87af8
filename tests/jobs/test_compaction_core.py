"""The compaction core's formulations agree with a plain-Python replay, and cluster their
result one Spark partition per lineage partition, whichever the sizes choose."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobs_support import Record, oracle
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.compaction import compacted, merges_into_state

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "c", "d"]
PARTITIONS = (0, 3)
STATE_TYPE = "partition int, key string, value binary, lsn long"
CHANGES_TYPE = "partition int, key string, value binary, lsn long, op string"

# (merge_max_changes_per_state_row, broadcast_max_rows, changes_in bound over the real
# count, the operator that shows the formulation): each forces one formulation, or one
# way of choosing it.
FORMULATIONS = {
    "merge into the state": (float("inf"), 0, 0, "Window"),
    "broadcast winners": (0.0, 10**9, 0, "BroadcastHashJoin"),
    "winners counted, then broadcast": (0.0, 10**9, 10**10, "BroadcastHashJoin"),
    "winners counted, too many: merged": (0.0, 0, 1, "Window"),
}


@st.composite
def histories(draw: st.DrawFn) -> tuple[dict[int, list[Record]], int]:
    """Per partition, records with increasing LSNs; and a base LSN splitting each log."""
    logs = {}
    for partition in PARTITIONS:
        steps = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(KEYS),
                    st.sampled_from(["put", "put", "delete"]),
                    st.binary(max_size=4),
                ),
                max_size=25,
            )
        )
        logs[partition] = [
            Record(key, value if op == "put" else None, lsn, op)
            for lsn, (key, op, value) in enumerate(steps)
        ]
    base_lsn = draw(st.integers(-1, 25))
    return logs, base_lsn


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=histories(), use_state=st.booleans())
def test_every_formulation_gives_the_last_put_per_key(spark, history, use_state) -> None:
    logs, base_lsn = history
    if not use_state:
        base_lsn = -1
    base = {p: oracle(records, base_lsn) for p, records in logs.items()}
    state_rows = [
        (p, key, value, lsn) for p, rows in base.items() for key, (value, lsn) in rows.items()
    ]
    change_rows = [
        (p, r.key, r.value, r.lsn, r.op)
        for p, records in logs.items()
        for r in records
        if (r.lsn or 0) > base_lsn
    ]
    states = by_partition(spark, state_rows, STATE_TYPE) if use_state else {}
    changes = by_partition(spark, change_rows, CHANGES_TYPE)
    expected = {p: oracle(records, 10**6) for p, records in logs.items()}

    for name, (merge_max, broadcast_max, inflated, operator) in FORMULATIONS.items():
        with compacted(
            spark,
            states,
            changes,
            partitions=PARTITIONS,
            changes_in=len(change_rows) + inflated,
            state_rows=len(state_rows),
            broadcast_max_rows=broadcast_max,
            merge_max_changes_per_state_row=merge_max,
        ) as compacted_state:
            result = compacted_state.frame
            task_partitions = compacted_state.task_partitions
            if task_partitions is not None:  # the map names each task's partition
                assert "partition" not in result.columns, name
                result = result.withColumn(
                    "partition",
                    F.element_at(F.array(*map(F.lit, task_partitions)), F.spark_partition_id() + 1),
                )
            rows = result.collect()
            placed = result.select("partition", F.spark_partition_id().alias("task")).distinct()
            pairs = [(row["partition"], row["task"]) for row in placed.collect()]
            tasks = [task for _, task in pairs]
            plan = io.StringIO()
            with redirect_stdout(plan):
                result.explain()
        assert not changes or operator in plan.getvalue(), f"{name}: not the formulation"
        if operator == "Window":  # each partition's rows are merged where they are read
            assert "Exchange" not in plan.getvalue(), f"{name}: shuffles"
        got: dict[int, dict[str, tuple[bytes | None, int]]] = {p: {} for p in PARTITIONS}
        for row in rows:
            assert row["key"] not in got[row["partition"]], f"{name}: a key twice"
            got[row["partition"]][row["key"]] = (bytes(row["value"]), row["lsn"])
        assert got == expected, name
        # One lineage partition per Spark partition, so one task writes each one.
        assert len(tasks) == len(set(tasks)), f"{name}: a task holds two lineage partitions"
        if operator == "Window" and pairs:  # the merge says which task holds which
            assert task_partitions is not None, name
            assert all(task_partitions[task] == p for p, task in pairs), f"{name}: {pairs}"


def by_partition(spark, rows: list[tuple], schema: str) -> dict:
    """Per partition with rows, its rows without the partition column."""
    frames = {}
    for partition in PARTITIONS:
        mine = [row[1:] for row in rows if row[0] == partition]
        if mine:
            frames[partition] = spark.createDataFrame(mine, schema.split(", ", 1)[1])
    return frames


@pytest.mark.parametrize(
    ("changes_in", "state_rows", "merges"),
    [(0, 0, True), (0, 5, True), (10, 0, False), (10, 10, True), (11, 10, False)],
)
def test_the_counts_choose_the_merge_at_most_one_change_per_state_row(
    changes_in, state_rows, merges
) -> None:
    assert merges_into_state(changes_in, state_rows) is merges


def test_a_join_refuses_a_partition_given_only_as_one_scan(spark) -> None:
    # A caller that read a partition's state and changes as one frame, for a merge, cannot
    # have it joined: the join needs them apart, and would otherwise leave it out.
    both = spark.createDataFrame(
        [("a", b"v", 1, "put")], "key string, value binary, lsn long, op string"
    )
    changes = {3: spark.createDataFrame([("b", b"w", 2, "put")], CHANGES_TYPE.split(", ", 1)[1])}
    with (
        pytest.raises(ValueError, match=r"partitions \[0\]: joining needs"),
        compacted(
            spark,
            {},
            changes,
            partitions=PARTITIONS,
            changes_in=2,
            state_rows=1,
            merge_inputs={0: both},
            merge_max_changes_per_state_row=0.0,
        ),
    ):
        pass
