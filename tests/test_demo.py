"""The demo's scenario runs in the suite at a small size; every check it prints must pass."""

from __future__ import annotations

import pytest

from snapledger.local import demo

pytestmark = [pytest.mark.ddblocal, pytest.mark.slow]


def test_demo_scenario_passes_every_check(tmp_path, capsys):
    status = demo.main(["--root", str(tmp_path / "demo"), "--partitions", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "FAIL" not in out
    assert "12 of 12 checks passed" in out
