"""``restore`` from a snapshot that is not REGISTERED is refused up front, exit 1 and why,
as a restore from an opaque one is (issue 30); before, it exited 0 with a FAILED job."""

from __future__ import annotations

import pytest

from snapledger.models.ledger import SnapshotStatus
from tests.cli.support import run_cli
from tests.support import write_history, write_segments


@pytest.mark.parametrize("status", ["DELETED", "EXPIRING", "REJECTED"])
def test_a_restore_from_a_snapshot_that_is_not_registered_is_refused(rt, status):
    write_segments(rt.store, "orders", 3, (0, 99))
    statuses = [SnapshotStatus(status), SnapshotStatus.REGISTERED]
    gone = write_history(rt.ledger, "orders", 3, statuses, rt.clock.now())[0]

    ran = run_cli("--local", "restore", "orders", "3", "--snapshot-id", gone.snapshot_id)

    assert ran.status == 1, ran.out
    assert f"{gone.snapshot_id} of orders/3 (LSN 1) is {status}" in " ".join(ran.out.split())
    assert rt.jobs.list_jobs().items == [] and rt.runner.started == {}
    ran = run_cli("--local", "--json", "restore", "orders", "3", "--snapshot-id", gone.snapshot_id)
    assert ran.status == 1 and ran.json()["error"] == "invalid_request"


def test_a_restore_from_a_snapshot_found_broken_is_refused(rt):
    write_segments(rt.store, "orders", 3, (0, 99))
    statuses = [SnapshotStatus.REGISTERED, SnapshotStatus.REGISTERED]
    problems = ("part-00000.parquet: missing",)
    broken = write_history(rt.ledger, "orders", 3, statuses, rt.clock.now(), broken={2: problems})[
        1
    ]

    ran = run_cli("--local", "restore", "orders", "3", "--snapshot-id", broken.snapshot_id)

    assert ran.status == 1, ran.out
    said = " ".join(ran.out.split())
    assert f"{broken.snapshot_id} of orders/3 (LSN 2) was found broken" in said
    assert "part-00000.parquet: missing" in said and "Start from another snapshot" in said
    assert rt.jobs.list_jobs().items == [] and rt.runner.started == {}
