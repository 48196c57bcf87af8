"""``snapledger local up``: files dropped under the root are processed as in AWS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.cli import main as cli
from tests.support import write_snapshot

pytestmark = [pytest.mark.ddblocal, pytest.mark.slow]


def wait_for(predicate, seconds=90.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_a_dropped_snapshot_is_registered_and_the_cli_sees_it(tmp_path, capsys):
    home = tmp_path / "home"
    log = (tmp_path / "up.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "snapledger.cli.main",
            "--home",
            str(home),
            "local",
            "up",
            "--poll-seconds",
            "0.2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        # Given a running local runtime
        assert wait_for((home / "runtime.json").exists), (tmp_path / "up.log").read_text()
        # When a processor drops a snapshot under the root
        key = write_snapshot(FileObjectStore(home / "root"), "orders", 3, 4242)
        # Then the router registers it, and the CLI (using the running DynamoDB Local) sees it
        assert wait_for(lambda: key in (tmp_path / "up.log").read_text()), (
            tmp_path / "up.log"
        ).read_text()
        assert cli.main(["--local", "--home", str(home), "--json", "latest", "orders", "3"]) == 0
        assert json.loads(capsys.readouterr().out)["head"]["latest_lsn"] == 4242
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=60)
        log.close()
    # And it stops cleanly, forgetting its endpoint
    assert status == 0
    assert not (home / "runtime.json").exists()
