"""``snapledger local up --s3-port``: an S3 endpoint a Restate node can write to, whose new
objects reach the functions as S3 events; the restate.toml table it prints is README's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from snapledger.adapters.object_store import open_object_store
from snapledger.cli import main as cli
from snapledger.layouts.restate_keys import RECOMMENDED_NUM_RETAINED
from snapledger.local.clients import local_s3_client
from snapledger.local.dynamodb_local import free_port
from snapledger.local.restate_config import snapshots_toml
from snapledger.local.runtime import LocalRuntime
from snapledger.local.up import restate_snippet
from tests.cli.test_local_up import wait_for
from tests.restate.fixtures import write_restate_snapshot

README = Path(__file__).resolve().parents[2] / "README.md"
PREFIX, STREAM = "restate/cluster-a", "payments"


def readme_restate_section() -> str:
    return README.read_text().split("\n## Restate\n", 1)[1].split("\n## ", 1)[0]


def readme_snippet() -> tuple[int, str]:
    """The port README's ``local up`` line gives, and the restate.toml table it shows."""
    section = readme_restate_section()
    command = re.search(r"snapledger local up --s3-port (\d+) --layout (\S+)", section)
    assert command, "README's Restate section shows no `local up --s3-port` line"
    assert command[2] == f"{PREFIX}=restate:{STREAM}"
    return int(command[1]), section.split("```toml\n", 1)[1].split("```", 1)[0]


def test_readmes_restate_toml_is_the_one_local_up_builds():
    port, snippet = readme_snippet()
    assert restate_snippet(f"http://127.0.0.1:{port}", PREFIX) == snippet


def test_local_up_sets_the_recommended_num_retained_not_restates_default_of_one():
    shown = tomllib.loads(restate_snippet("http://127.0.0.1:9000", PREFIX))["worker"]["snapshots"]
    assert shown["num-retained"] == RECOMMENDED_NUM_RETAINED == 255


@pytest.mark.parametrize("count", [0, 256, -1])
def test_a_num_retained_restate_refuses_is_refused_naming_the_range(count):
    with pytest.raises(ValueError, match="1 to 255"):
        snapshots_toml(destination="s3://b/p", endpoint="http://x", num_retained=count)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--restate-prefix", f"{PREFIX}={STREAM}"], "needs --s3-port"),
        (["--s3-port", "0", "--restate-prefix", PREFIX], "give PREFIX=STREAM"),
        (["--s3-port", "0", "--restate-prefix", "snapshots/x=payments"], "inside snapshots/"),
    ],
)
def test_unusable_arguments_are_refused_in_one_line(arguments, says, tmp_path, capsys):
    status = cli.main(["--home", str(tmp_path / "home"), "local", "up", *arguments])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "home" / "runtime.json").exists()


@pytest.mark.ddblocal
@pytest.mark.slow
def test_a_restate_snapshot_put_to_the_endpoint_is_registered(tmp_path, capsys):
    home, log_path, port = tmp_path / "home", tmp_path / "up.log", free_port()
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "snapledger.cli.main", "--home", str(home), "local", "up"),
            *("--poll-seconds", "0.2", "--s3-port", str(port)),
            *("--layout", f"{PREFIX}=restate:{STREAM}"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        # Given a running local runtime with an S3 endpoint and a Restate prefix
        assert wait_for((home / "runtime.json").exists), log_path.read_text()
        endpoint = json.loads((home / "runtime.json").read_text())["s3_endpoint"]
        assert endpoint == f"http://127.0.0.1:{port}"
        # (it printed README's restate.toml table, at its own port)
        readme_port, snippet = readme_snippet()
        printed = log_path.read_text().replace(f":{port}", f":{readme_port}")
        assert "\n" + snippet + "\n" in printed, printed
        # When a Restate node puts a snapshot to the endpoint (with boto3, as Restate's S3
        # client does: the SSTs, then metadata.json)
        bucket = open_object_store("s3://snapledger-local", s3_client=local_s3_client(endpoint))
        written = write_restate_snapshot(bucket, 4242, partition=1, prefix=PREFIX)
        # Then the router delivers it to register, and the ledger has it as the latest
        key = written.location.metadata_key
        assert wait_for(lambda: "became_latest" in log_path.read_text()), log_path.read_text()
        delivered = [line for line in log_path.read_text().splitlines() if key in line]
        assert len(delivered) == 1 and '"outcome": "became_latest"' in delivered[0], delivered
        assert cli.main(["--local", "--home", str(home), "--json", "latest", STREAM, "1"]) == 0
        head = json.loads(capsys.readouterr().out)["head"]
        assert (head["latest_snapshot_id"], head["latest_lsn"]) == (
            written.location.snapshot_id,
            4242,
        )
        # And another process attaching to it uses the same bucket and Restate prefixes
        with LocalRuntime(home=home) as attached:
            assert attached.store.uri == "s3://snapledger-local"
            assert attached.layouts.restate_for(STREAM) is not None
            assert attached.store.head(key) is not None
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=60)
        log.close()
    assert status == 0
    assert not (home / "runtime.json").exists()
