"""`make demo-fluss` runs end to end against the real Fluss cluster it starts: every check
passes (registration, GC beside Fluss's retention, heal, the wiped tablet server restored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapledger.demos import fluss


@pytest.mark.fluss
def test_the_fluss_demo_passes_every_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    status = fluss.main(["--root", str(tmp_path / "demo"), "--rows", "600"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "11 of 11 checks passed" in out
    assert "checked by the fluss-kv layout" in out and '"state": "healed"' in out
