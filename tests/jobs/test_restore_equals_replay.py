"""Invariant 4: restore from a snapshot at LSN s to target t equals a full replay to t."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobs_support import (
    Record,
    check_descriptor_files,
    oracle,
    read_state,
    write_processor_snapshot,
    write_segment,
)

from jobs.args import JobArgs
from jobs.job import run_job

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "c", "d", "e"]  # few keys, so puts, deletes and re-puts of one key mix


@st.composite
def changelogs(draw: st.DrawFn) -> tuple[list[Record], list[tuple[int, int]], int, int]:
    """Records with increasing (not always dense) LSNs, cut into contiguous segments, and
    a snapshot LSN s (-1: none) and target t with s <= t."""
    ops = draw(
        st.lists(
            st.tuples(
                st.sampled_from(KEYS),
                st.sampled_from(["put", "put", "delete"]),
                st.one_of(st.none(), st.binary(max_size=6)),
                st.integers(1, 3),
            ),
            min_size=1,
            max_size=40,
        )
    )
    records, lsn = [], -1
    for key, op, value, step in ops:
        lsn += step
        records.append(Record(key, value if op == "put" else None, lsn, op))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=4)))
    starts = [0, *(records[c].lsn for c in cuts if c < len(records))]
    bounds = [(start, end - 1) for start, end in zip(starts, [*starts[1:], lsn + 1], strict=True)]
    snapshot_lsn = draw(st.integers(-1, lsn))
    target = draw(st.integers(max(snapshot_lsn, 0), lsn))
    return records, bounds, snapshot_lsn, target


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changelog=changelogs())
def test_restore_from_any_snapshot_equals_full_replay(spark, changelog) -> None:
    records, bounds, snapshot_lsn, target = changelog
    root = Path(tempfile.mkdtemp(prefix="restore-prop-"))
    # Given the same changelog in partitions 0 and 1, and a snapshot at s for partition 0
    for partition in (0, 1):
        for first, last in bounds:
            chunk = [r for r in records if first <= (r.lsn or 0) <= last]
            write_segment(root, "s", partition, first, last, chunk)
    bases = {}
    if snapshot_lsn >= 0:
        bases[0] = write_processor_snapshot(
            root, "s", 0, snapshot_lsn, oracle(records, snapshot_lsn)
        )
    # When one restore job restores partition 0 from the snapshot and replays partition 1
    run_job(
        spark,
        JobArgs(
            kind="restore",
            root=root.as_uri(),
            stream="s",
            partitions=(0, 1),
            job_id="prop",
            target_lsn=target,
            bases=bases,
        ),
    )
    # Then both equal the plain-Python replay of the log up to t
    expected = oracle(records, target)
    assert read_state(root, "restores/prop/0/") == expected
    assert read_state(root, "restores/prop/1/") == expected
    for partition in (0, 1):
        descriptor = check_descriptor_files(root, f"restores/prop/{partition}/", "_restore.json")
        assert descriptor["lsn"] == target
