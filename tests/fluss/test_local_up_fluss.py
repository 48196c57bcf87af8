"""``snapledger local up --fluss``: a Fluss 0.7 cluster beside the local registry, its
remote.data.dir the root, so a table's KV snapshots are registered as they land by the
fluss-kv layout the --layout entry names; stopped with the runtime."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from snapledger.cli import main as cli
from snapledger.local.fluss_cluster import port_open
from snapledger.local.fluss_probe import FlussProbe
from tests.cli.test_local_up import wait_for

STREAM = "orders-kv"


@pytest.mark.fluss
def test_local_up_runs_fluss_and_registers_its_tables_snapshots(tmp_path: Path):
    home, log_path = tmp_path / "home", tmp_path / "up.log"
    # A fresh cluster's first table has id 0: its KV folder is known before it exists
    command = [
        sys.executable,
        "-m",
        "snapledger.cli.main",
        "--home",
        str(home),
        "local",
        "up",
        "--poll-seconds",
        "0.5",
        "--fluss",
        "--fluss-snapshot-interval",
        "1",
        "--layout",
        f"kv/shop/orders-0=fluss-kv:{STREAM}",
    ]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert wait_for((home / "runtime.json").exists, 180), log_path.read_text()
            fluss = json.loads((home / "runtime.json").read_text())["fluss"]
            probe = FlussProbe(fluss["bootstrap_servers"], "shop.orders")
            assert probe.create(2) == 0
            probe.upsert(0, 500, version=1)

            def registered() -> bool:
                lines = [
                    json.loads(line)
                    for line in log_path.read_text().splitlines()
                    if line.startswith("{")
                ]
                records = [r for a in lines for r in a.get("records", [])]
                return {
                    r["key"].split("/")[3]  # kv/shop/orders-0/{bucket}/snap-{id}/_METADATA
                    for r in records
                    if r.get("outcome") == "became_latest" and r.get("layout") == "fluss-kv"
                } == {"0", "1"}

            assert wait_for(registered, 120), log_path.read_text()[-3000:]
            assert cli.main(["--local", "--home", str(home), "--json", "latest", STREAM, "1"]) == 0
        finally:
            process.send_signal(signal.SIGTERM)
            status = process.wait(timeout=90)
    said = log_path.read_text()
    assert status == 0, said[-3000:]
    assert (
        "Fluss 0.7 at" in said and f"Fluss table folder kv/shop/orders-0 is stream {STREAM}" in said
    )
    assert not port_open(int(fluss["bootstrap_servers"].rpartition(":")[2]))


def test_fluss_beside_an_s3_endpoint_is_refused_in_one_line(tmp_path, capsys):
    status = cli.main(["--home", str(tmp_path / "h"), "local", "up", "--fluss", "--s3-port", "0"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert "drop --s3-port" in err and len(err.splitlines()) == 1
