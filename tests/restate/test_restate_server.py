"""The real Restate 1.7.12 server: the snapshot layout it writes to S3, its restore of a
wiped node from those snapshots, and the samples the Restate layout code is written against
(tests/restate/samples, re-captured with SNAPLEDGER_RECAPTURE_RESTATE_SAMPLES=1)."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.restate.harness import (
    CLUSTER_NAME,
    NODE_NAME,
    PREFIX,
    CreatedSnapshot,
    RestateHarness,
    S3Object,
)

pytestmark = [pytest.mark.restate, pytest.mark.slow]

SAMPLES = Path(__file__).with_name("samples")
RECAPTURE = os.environ.get("SNAPLEDGER_RECAPTURE_RESTATE_SAMPLES") == "1"
# The last 8 bytes of every RocksDB block-based table file: kBlockBasedTableMagicNumber,
# little-endian.
ROCKSDB_MAGIC = (0x88E241B785F4CFF7).to_bytes(8, "little")
FOOTER_BYTES = 64

KEY = re.compile(
    rf"^{re.escape(PREFIX)}/(?P<partition>\d+)/"
    r"(?:latest\.json"
    r"|(?P<dir>lsn_(?P<lsn>\d{20})-(?P<snapshot_id>snap_[0-9A-Za-z]+))/"
    r"(?P<file>\d{6}\.sst|metadata\.json))$"
)


def snapshot_dirs(objects: list[S3Object]) -> dict[tuple[int, str], dict[str, S3Object]]:
    """(partition, snapshot id) -> {file name: object}, asserting every key's shape."""
    dirs: dict[tuple[int, str], dict[str, S3Object]] = defaultdict(dict)
    for obj in objects:
        match = KEY.match(obj.key)
        assert match, f"an object outside Restate's layout: {obj.key}"
        if match["dir"]:
            dirs[(int(match["partition"]), match["snapshot_id"])][match["file"]] = obj
    return dirs


def put_values(restate: RestateHarness, prefix: str, count: int, version: str) -> dict[str, str]:
    values = {f"{prefix}-{i:04d}": f"{prefix}-{i}-{version}" for i in range(count)}
    restate.timed(f"put_{count}_{prefix}_{version}", lambda: restate.put_many(values))
    return values


def snapshot(restate: RestateHarness, label: str) -> dict[int, CreatedSnapshot]:
    created = restate.timed(f"snapshots_{label}", restate.create_snapshots)
    return {c.partition: c for c in created}


def test_forced_snapshots_land_in_restates_layout(restate: RestateHarness) -> None:
    # Given a few hundred keys spread over the partitions, snapshotted twice with writes between
    put_values(restate, "layout", 300, "v1")
    first = snapshot(restate, "layout_1")
    put_values(restate, "layout", 300, "v2")
    second = snapshot(restate, "layout_2")
    assert sorted(first) == sorted(second) == list(range(restate.partitions))

    # When the bucket is listed
    objects = restate.list_bucket()
    dirs = snapshot_dirs(objects)  # every key is {prefix}/{partition}/... as Restate writes
    keys = {obj.key for obj in objects}

    for partition in range(restate.partitions):
        older, newer = first[partition], second[partition]
        # Then each partition's latest.json names the newest snapshot, all retained newest first
        latest = restate.read_json(f"{PREFIX}/{partition}/latest.json")
        assert latest["version"] == "V2"
        assert latest["partition_id"] == partition
        assert latest["snapshot_id"] == newer.snapshot_id
        assert latest["path"] == f"lsn_{latest['min_applied_lsn']:020d}-{newer.snapshot_id}"
        assert (latest["cluster_name"], latest["node_name"]) == (CLUSTER_NAME, NODE_NAME)
        retained = latest["retained_snapshots"]
        assert [r["snapshot_id"] for r in retained[:2]] == [newer.snapshot_id, older.snapshot_id]
        assert retained[0]["min_applied_lsn"] == latest["min_applied_lsn"]
        assert retained[0]["path"] == latest["path"]
        assert retained[1]["min_applied_lsn"] < retained[0]["min_applied_lsn"]
        # the second snapshot's "LSN >= n" is the first one's LSN (what the repository held)
        assert newer.archived_lsn == retained[1]["min_applied_lsn"]

        for entry in retained[:2]:
            # And each retained snapshot is a directory of SSTs and a metadata.json naming them
            files = dirs[(partition, entry["snapshot_id"])]
            assert "metadata.json" in files, f"{entry['path']} has no metadata.json"
            ssts = {name: obj for name, obj in files.items() if name.endswith(".sst")}
            assert ssts, f"{entry['path']} has no SST"
            assert f"{PREFIX}/{partition}/{entry['path']}/metadata.json" in keys
            metadata = restate.read_json(files["metadata.json"].key)
            assert metadata["version"] == "V1"
            assert metadata["snapshot_id"] == entry["snapshot_id"]
            assert metadata["partition_id"] == partition
            assert metadata["min_applied_lsn"] == entry["min_applied_lsn"]
            assert metadata["cluster_fingerprint"] == latest["cluster_fingerprint"]
            named = {f["name"].lstrip("/"): f["size"] for f in metadata["files"]}
            assert named == {name: obj.size for name, obj in ssts.items()}
            for obj in ssts.values():
                footer = restate.read_object(obj.key, byte_range=f"bytes=-{FOOTER_BYTES}")
                assert footer.endswith(ROCKSDB_MAGIC), f"{obj.key} is not a RocksDB table"


def test_a_wiped_node_restores_every_key_from_its_snapshots_and_log(
    restate: RestateHarness,
) -> None:
    # Given keys snapshotted, then half of them overwritten after the snapshot (log only)
    values = put_values(restate, "restore", 200, "snapshotted")
    latest = snapshot(restate, "restore")
    values.update(put_values(restate, "restore", 100, "after-snapshot"))

    # When the node is killed, its partition store wiped, and the node restarted
    restate.timed("kill_server", restate.kill_server)
    restate.wipe_partition_store()
    restate.timed("restart_server_after_wipe", restate.start_server)

    # Then every key answers its last value
    answered = restate.timed("get_200_restore", lambda: restate.get_many(values))
    assert answered == values
    # And each partition was restored from the snapshot latest.json names, not from scratch
    log = restate.server_log.read_text(errors="replace")
    imports = log.count("Importing partition store snapshot")
    assert imports == restate.partitions, restate.server_log
    for created in latest.values():
        assert created.snapshot_id in log, f"partition {created.partition} not restored from it"


def shape(value: Any) -> Any:
    """The structure of a JSON value: field names and value types, lists by their items."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        shapes = []
        for item in value:
            if shape(item) not in shapes:
                shapes.append(shape(item))
        return shapes
    return type(value).__name__


def test_the_samples_match_what_the_server_writes_now(restate: RestateHarness) -> None:
    # Given a snapshot of every partition, partition 0's latest.json, metadata.json, one SST
    put_values(restate, "sample", 20, "v1")
    snapshot(restate, "sample")
    latest_key = f"{PREFIX}/0/latest.json"
    latest = restate.read_json(latest_key)
    directory = f"{PREFIX}/0/{latest['path']}"
    metadata = restate.read_json(f"{directory}/metadata.json")
    sst_key = f"{directory}/{metadata['files'][-1]['name'].lstrip('/')}"
    footer = restate.read_object(sst_key, byte_range=f"bytes=-{FOOTER_BYTES}")

    if RECAPTURE:
        (SAMPLES / "latest.json").write_text(json.dumps(latest, indent=2) + "\n")
        (SAMPLES / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
        (SAMPLES / "sst-footer.bin").write_bytes(footer)

    # Then the samples have the same fields and value types as what the server writes now
    sample_latest = json.loads((SAMPLES / "latest.json").read_text())
    sample_metadata = json.loads((SAMPLES / "metadata.json").read_text())
    sample_footer = (SAMPLES / "sst-footer.bin").read_bytes()
    assert shape(latest) == shape(sample_latest)
    assert shape(metadata) == shape(sample_metadata)
    assert (latest["version"], metadata["version"]) == (
        sample_latest["version"],
        sample_metadata["version"],
    )
    # And the footer sample is the tail of a RocksDB table, as every SST the server writes
    assert len(footer) == len(sample_footer) == FOOTER_BYTES
    assert footer.endswith(ROCKSDB_MAGIC)
    assert sample_footer.endswith(ROCKSDB_MAGIC)
