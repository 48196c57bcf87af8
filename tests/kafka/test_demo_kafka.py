"""``make demo-kafka`` runs at a small size: the real broker and application, every partition
snapshotted three times while the application runs, an instance booted from the snapshots
restoring only what came after them, one replaying the changelog, both serving the sums of
the orders, GC with a hold deleting none a boot would pick; each step said in words, the two
boot times printed; exit status 0."""

from __future__ import annotations

import re

import pytest

from tests.support import run_module

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.ddblocal]


def test_the_kafka_demo_passes_every_check_and_prints_both_boot_times(tmp_path):
    done = run_module(
        "snapledger.demos.kafka_streams",
        *("--root", str(tmp_path / "demo"), "--orders", "4000", "--customers", "500"),
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    lines = out.splitlines()
    assert "[FAIL]" not in out
    for said in (
        "  [ok] round 1: every partition snapshotted while A runs",
        "  [ok] round 3: every partition snapshotted while A runs",
        "  [ok] each partition's latest is its newest snapshot",
        "  [ok] every snapshot registered, checked by the kafka-streams layout - registered: "
        "24 became_latest (layout kafka-streams)",
        "  [ok] C restored the whole changelog - 4,000 records",
        "  [ok] B and C serve the same totals, equal to the sums of the orders - ",
        "  [ok] GC deleted the oldest of partitions 1-7, kept the held one - 7 deleted",
        "  [ok] nothing GC deleted is one B's boot picked",
        "  [ok] a boot after GC picks the same snapshots as B's - 8 tasks seeded",
    ):
        assert any(line.startswith(said) for line in lines), (said, out)
    [restored] = [line for line in lines if "B restored at most" in line]
    counts = [
        int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:restored|written)", restored)
    ]
    assert len(counts) == 2 and 0 < counts[0] == counts[1] < 4000, restored  # the tail only
    seeded = [line for line in lines if re.fullmatch(r"   0_\d: seeded at offset \d+", line)]
    assert len(seeded) == 8, out
    assert re.search(r"^B from the snapshots +[\d.]+s +[\d,]+$", out, re.MULTILINE), out
    assert re.search(r"^C replaying +[\d.]+s +4,000$", out, re.MULTILINE), out
    rounds = [line for line in lines if line.startswith("   registered: ")]
    assert rounds == ["   registered: 8 became_latest (layout kafka-streams)"] * 3, out
    assert lines[-1].startswith("14 of 14 checks passed")
