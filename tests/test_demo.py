"""The demo's scenario runs in the suite at a small size; every check it prints must pass."""

from __future__ import annotations

import re

import pytest

from snapledger.local import demo

pytestmark = [pytest.mark.ddblocal, pytest.mark.spark, pytest.mark.slow]


def test_demo_scenario_passes_every_check(tmp_path, capsys, spark):
    status = demo.main(
        ["--root", str(tmp_path / "demo"), "--partitions", "2", "--rows", "4000"], spark=spark
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "[FAIL]" not in out
    passed, total = map(int, re.search(r"(\d+) of (\d+) checks passed", out).groups())
    # 2 per-partition checks after bootstrap, 2 rounds, GC and 2 restores per partition
    assert passed == total >= 20
    assert "equals full replay" in out and "latest advanced" in out
    assert out.count("latest.json names the ledger's latest and reads back") == 2
    # a stream snapshot: requested, completed by both partitions, the stream restored to it
    assert "generation 1 COMPLETED by all 2 partitions" in out
    assert out.count("stream restore from generation 1") == 2
