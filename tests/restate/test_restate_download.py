"""The client downloads a Restate snapshot whole and checked (format ``restate``)."""

from __future__ import annotations

import json

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client.errors import SnapshotCorruptError
from snapledger.client.restate_download import download_restate_snapshot
from snapledger.client.storage import open_store
from snapledger.errors import InvalidKeyError
from tests.restate.fixtures import write_restate_snapshot


def test_a_restate_snapshot_is_downloaded_with_its_metadata(tmp_path):
    objects = FileObjectStore(tmp_path / "root")
    written = write_restate_snapshot(objects, 1435, files=3)
    dest = download_restate_snapshot(
        open_store(str(tmp_path / "root")), written.location.metadata_key, tmp_path / "out"
    )
    names = sorted(p.name for p in dest.iterdir())
    assert names == ["000024.sst", "000025.sst", "000026.sst", "metadata.json"]
    for key in written.sst_keys:
        assert (dest / key.rpartition("/")[2]).read_bytes() == objects.get(key)
    assert json.loads((dest / "metadata.json").read_text()) == written.metadata


@pytest.mark.parametrize("damage", ["resized", "footer"])
def test_a_damaged_file_is_refused_and_not_left_in_place(tmp_path, damage):
    objects = FileObjectStore(tmp_path / "root")
    written = write_restate_snapshot(objects, 1435)
    victim = written.sst_keys[0]
    body = objects.get(victim)
    objects.put(victim, body + b"x" if damage == "resized" else body[:-1] + b"\0")
    with pytest.raises(SnapshotCorruptError, match=r"000024\.sst"):
        download_restate_snapshot(
            open_store(str(tmp_path / "root")), written.location.metadata_key, tmp_path / "out"
        )
    assert not any(p.name.startswith("000024") for p in (tmp_path / "out").iterdir())


def test_a_key_that_is_no_restate_metadata_is_refused(tmp_path):
    with pytest.raises(InvalidKeyError, match="not a Restate snapshot"):
        download_restate_snapshot(open_store(str(tmp_path)), "snapshots/x/0/m.json", tmp_path)
