"""``make demo-restate`` runs: the real Restate server's snapshots registered, retained with a
hold, a corrupt latest healed, a chosen snapshot restored from, every key right after each
wipe, each step said in words; exit status 0."""

from __future__ import annotations

import pytest

from tests.support import run_module

pytestmark = [pytest.mark.restate, pytest.mark.slow, pytest.mark.ddblocal]


def test_the_restate_demo_passes_every_check_and_says_what_happened(tmp_path):
    done = run_module("snapledger.demos.restate", "--root", str(tmp_path / "demo"), timeout_s=300)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    lines = out.splitlines()
    assert "[FAIL]" not in out
    for said in (
        "  [ok] every snapshot Restate wrote is registered - 8 of 8 metadata.json",
        "  [ok] payments/0 keeps 3 - 3 registered, the held one among them",
        "  [ok] payments/1 keeps 2 - 2 registered",
        "  [ok] the broken latest is counted (the alarm's metric)",
        "  [ok] partition 0's latest.json names the chosen snapshot",
        "  [ok] partition 1 serves again, every key right",
    ):
        assert any(line.startswith(said) for line in lines), (said, out)
    rights = [line for line in lines if line.startswith("  [ok] every key right")]
    assert len(rights) == 2, out  # after GC, after the restore (and the heal's check)
    assert any("found broken: " in line and ".sst" in line for line in lines)
    assert lines[-1].startswith("20 of 20 checks passed")
    assert not any(line.lstrip().startswith("{") for line in lines), "a raw dict was printed"
