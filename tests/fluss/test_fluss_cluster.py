"""The real Fluss cluster the Fluss tests run: KV snapshots land under `remote.data.dir` in the
layout snapledger will register (docs/fluss.md), and a tablet server whose KV directories are
lost restores every key from the latest snapshot plus the log after it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger.local.fluss_cluster import (
    FlussCluster,
    FlussClusterError,
    check_snapshot_settings,
    yaml_config,
)
from snapledger.local.fluss_probe import FlussProbe, Row
from tests.fluss.conftest import wait_for_snapshots

Table = Callable[[int], tuple[FlussProbe, int]]


@pytest.mark.fluss
def test_kv_snapshots_land_under_remote_data_dir_in_fluss_layout(
    fluss_cluster: FlussCluster, fluss_table: Table
):
    # Given a table of 3 buckets with 3,000 rows, 100 of them deleted
    probe, table_id = fluss_table(3)
    probe.upsert(0, 3000, version=1)
    probe.delete(0, 100)

    # When every bucket has snapshotted all of it
    latest = wait_for_snapshots(probe, probe.offsets())

    # Then each bucket's latest snapshot is kv/{db}/{table}-{id}/{bucket}/snap-{id}/_METADATA,
    # its files in snap-{id}/ (private) and shared/ (SSTs), every one present with its size
    table_dir = (
        fluss_cluster.remote_dir / "kv" / "probe" / f"{probe.table.split('.')[1]}-{table_id}"
    )
    assert [s.bucket for s in latest] == [0, 1, 2]
    for snap in latest:
        bucket_dir = table_dir / str(snap.bucket)
        metadata = json.loads((bucket_dir / f"snap-{snap.snapshot_id}" / "_METADATA").read_text())
        assert metadata["table_id"] == table_id
        assert metadata["bucket_id"] == snap.bucket
        assert metadata["snapshot_id"] == snap.snapshot_id
        assert metadata["log_offset"] == snap.log_offset
        handles = metadata["kv_snapshot_handle"]
        shared = [h["kv_file_handle"] for h in handles["shared_file_handles"]]
        private = [h["kv_file_handle"] for h in handles["private_file_handles"]]
        assert shared and len(private) == 3  # SSTs; CURRENT, MANIFEST, OPTIONS
        for handle in shared + private:
            assert Path(handle["path"]).stat().st_size == handle["size"]
        assert {Path(h["path"]).parent for h in shared} == {bucket_dir / "shared"}
        assert {Path(h["path"]).parent for h in private} == {
            bucket_dir / f"snap-{snap.snapshot_id}"
        }
        assert sorted(snap.files) == sorted(h["path"] for h in shared + private)


@pytest.mark.fluss
def test_a_tablet_server_whose_kv_is_wiped_restores_every_key_from_the_latest_snapshot(
    fluss_cluster: FlussCluster, fluss_table: Table
):
    # Given 2,000 rows, some deleted and some updated, all in the buckets' snapshots...
    probe, table_id = fluss_table(3)
    probe.upsert(0, 2000, version=1)
    probe.delete(0, 100)
    probe.upsert(500, 1000, version=2)
    wait_for_snapshots(probe, probe.offsets())
    # ...and more written after them (replayed from the log on restore)
    probe.upsert(1000, 1200, version=3)
    before = probe.read(0, 2100)
    assert len(before) == 1900 and before[1100] == Row(1100, "k1100", 3, 100)

    # When the tablet server stops, its KV directories are deleted and it starts again
    fluss_cluster.stop_tablet_server()
    wiped = fluss_cluster.wipe_tablet_kv()
    assert len(wiped) >= 3
    log = fluss_cluster.log_path("tablet-0")
    assert _downloads(log, table_id) == 0
    fluss_cluster.start_tablet_server()

    # Then it downloads each bucket's latest snapshot and serves every key as before
    assert probe.read(0, 2100) == before
    assert _downloads(log, table_id) == 3  # one per bucket


def _downloads(log: Path, table_id: int) -> int:
    """How many of the table's buckets the tablet server's log shows restored from a remote
    snapshot (Fluss 0.7's Replica logs "Start to download kv snapshot ...")."""
    pattern = rf"Start to download kv snapshot .* for TableBucket\{{tableId={table_id}, "
    return len(re.findall(pattern, log.read_text(errors="replace")))


def test_snapshot_settings_out_of_bounds_are_named():
    with pytest.raises(FlussClusterError, match=r"snapshot_interval_s must be in \[1, 86400\]"):
        check_snapshot_settings(0, 3)
    with pytest.raises(FlussClusterError, match=r"num_retained must be in \[1, 1000\], got 0"):
        check_snapshot_settings(1, 0)


def test_server_yaml_values_are_unquoted_and_one_line():
    assert yaml_config({"a": "1", "b": "/x y"}) == "a: 1\nb: /x y\n"
    with pytest.raises(FlussClusterError, match="the Fluss setting b must be one non-empty line"):
        yaml_config({"b": "x\ny"})


def test_a_missing_install_names_the_script_and_make_setup(tmp_path: Path):
    cluster = FlussCluster(tmp_path / "work", install_dir=tmp_path / "nothing-here")
    with pytest.raises(
        FlussClusterError, match=r"not installed in .*install-fluss\.sh.*make setup"
    ):
        cluster.start()
    with pytest.raises(FlussClusterError, match="start"):
        _ = cluster.bootstrap_servers


def test_the_install_script_does_nothing_when_the_jars_are_there(tmp_path: Path):
    # Given the installed jars, and a PATH without java or mvn (a download would need both)
    installed = FlussCluster(tmp_path).install_dir
    if not (installed / "lib" / "fluss-server-0.7.0.jar").is_file():
        pytest.skip("the Fluss server is not installed: make setup")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    script = Path(__file__).resolve().parents[2] / "tools" / "install-fluss.sh"
    env = {"PATH": str(bin_dir), "SNAPLEDGER_FLUSS_DIR": str(installed)}
    # When it runs again, it exits at once, fetching nothing
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    # and an empty folder does need the tools, and says so
    env["SNAPLEDGER_FLUSS_DIR"] = str(tmp_path / "empty")
    missing = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False)
    assert missing.returncode == 1 and "need Java 17+" in missing.stderr
