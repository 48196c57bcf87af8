"""``snapledger list`` shows a REJECTED snapshot's code and reason in its table (cut with a
marker past ``REASON_CHARS``, so a row is one line in a pipe; ``--json`` has it whole)."""

from __future__ import annotations

from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.cli.support import run_cli
from tests.cli.test_cli_terminal import at_80_columns, fits
from tests.support import write_snapshot


def rejected(rt) -> str:
    """A snapshot of orders/3 at LSN 400 whose data file vanished before its manifest was
    registered: REJECTED. Its id."""
    key = write_snapshot(rt.store, "orders", 3, 400)
    rt.store.delete_many([key.replace("_manifest.json", "part-00000.parquet")])
    return register_manifest(
        key, ledger=rt.ledger, store=rt.store, clock=rt.clock, layouts=NATIVE_ONLY
    ).snapshot_id


def test_list_shows_a_rejected_snapshots_reason_in_its_row(seeded, rt):
    # Given a REJECTED snapshot beside three registered ones
    snapshot_id = rejected(rt)
    whole = next(
        s["rejection_reason"]
        for s in run_cli("--local", "--json", "list", "orders", "3").json()["snapshots"]
        if s["snapshot_id"] == snapshot_id
    )
    # When the table is shown
    ran = run_cli("--local", "list", "orders", "3")
    # Then its row says why, in a reason column, the registered ones' reason empty
    assert ran.status == 0, ran
    lines = ran.out.splitlines()
    header = next(line for line in lines if line.split()[:2] == ["lsn", "snapshot_id"])
    assert header.split()[-1] == "reason"
    [row] = [line for line in lines if snapshot_id in line]
    assert "REJECTED" in row and "invalid: files[0] 'part-00000.parquet' is not in the store" in row
    assert [line for line in lines if "invalid: " in line] == [row]
    # cut with a marker, the whole reason in --json
    assert len(whole) > 100 and whole not in ran.out
    assert row.rstrip().endswith("… (cut: --json has it whole)")


def test_a_list_with_no_rejected_snapshot_has_no_reason_column(seeded):
    ran = run_cli("--local", "list", "orders", "3")
    assert ran.status == 0 and "reason" not in ran.out


def test_the_reason_at_80_columns_wraps_in_its_column(seeded, rt):
    snapshot_id = rejected(rt)
    ran = at_80_columns("list", "orders", "3")
    assert ran.status == 0 and fits(ran.out), ran.out
    shown = "".join(ran.out.split())
    assert "invalid:files[0]'part-00000.parquet'isnotinthestore" in shown
    assert snapshot_id[:4] in shown


def test_console_md_states_the_cut_as_the_table_makes_it():
    from pathlib import Path

    from snapledger.cli.render import CUT, REASON_CHARS

    doc = " ".join(Path("docs/console.md").read_text().split())
    assert f'past {REASON_CHARS} characters (`REASON_CHARS`) cut and ending "{CUT}"' in doc
