"""The Fluss client program's command line: a bad option is one line naming it (exit 2),
before any connection is made."""

from __future__ import annotations

import pytest

from snapledger.local.fluss_probe import FlussProbe, FlussProbeError


@pytest.mark.fluss
@pytest.mark.parametrize(
    ("table", "command", "says"),
    [
        ("no-dot", ("read", "--from", "0", "--to", "1"), "--table is DB.TABLE"),
        (
            "p.t",
            ("upsert", "--from", "x", "--to", "1", "--version", "1"),
            "--from must be an integer",
        ),
        ("p.t", ("create", "--buckets", "0"), "--buckets must be in [1, 1024], got 0"),
        ("p.t", ("undo", "--offsets", "0:12"), "--offsets is bucket=offset pairs"),
        ("p.t", ("upsert", "--from", "0", "--to", "1"), "--version is required"),
        ("p.t", ("fly",), "unknown command 'fly'"),
        (
            "p.t",
            ("await", "--from", "0", "--to", "9", "--step", "0", "--version", "1"),
            "--step must be in [1, 2147483647], got 0",
        ),
        (
            "p.t",
            ("await", "--from", "0", "--to", "9", "--version", "1", "--timeout-s", "0"),
            "--timeout-s must be in [1, 3600], got 0",
        ),
    ],
)
def test_a_bad_option_is_named(table, command, says):
    probe = FlussProbe("127.0.0.1:1", table)
    with pytest.raises(FlussProbeError, match="exit 2") as failed:
        probe.run(*command)
    assert f"fluss-probe: {says}" in str(failed.value)
