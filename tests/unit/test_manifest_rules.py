"""Manifest rules that the end-to-end tests cannot reach."""

from __future__ import annotations

import json

import pytest

from snapledger.core.manifest_rules import (
    ManifestRejectedError,
    manifest_digest,
    parse_manifest,
    path_problem,
)
from snapledger.layout import SnapshotLocation

SID = "01J00000000000000000000000"
LOCATION = SnapshotLocation("orders", 3, 300, SID)


def document(files):
    return {
        "format_version": 1,
        "stream": "orders",
        "partition": 3,
        "lsn": 300,
        "snapshot_id": SID,
        "epoch": 7,
        "producer": {"name": "t"},
        "source": {"kind": "processor"},
        "files": files,
    }


def test_more_than_100000_files_is_refused_with_a_clear_message():
    # 100,001 entries cannot fit in 1 MiB, so the count is checked on a larger budget here:
    # it is the second guard behind the size limit.
    raw = json.dumps(document([{"path": f"p{i}", "size": 1} for i in range(100_001)])).encode()
    with pytest.raises(
        ManifestRejectedError, match="lists 100,001 files, over the limit of 100,000"
    ) as err:
        parse_manifest(LOCATION, raw, max_bytes=len(raw))
    assert err.value.epoch == 7


def test_oversize_manifest_is_refused_before_parsing():
    with pytest.raises(ManifestRejectedError, match="over the 1,048,576-byte limit"):
        parse_manifest(LOCATION, b" " * (1024 * 1024 + 1))


@pytest.mark.parametrize(
    "path",
    [
        "../x",
        "a/../../x",
        "/abs",
        "a//b",
        "a/",
        ".",
        "a\\b",
        "%2e%2e/x",
        "a\x00b",
        "\uff0e\uff0e/x",
        "_manifest.json",
    ],
)
def test_escaping_paths_are_named(path):
    assert path_problem(path) is not None


@pytest.mark.parametrize("path", ["part-00000.parquet", "data/part-1.parquet", "a.b..c", "x..y/z"])
def test_safe_paths_pass(path):
    assert path_problem(path) is None


def test_digest_ignores_formatting_but_not_content():
    a = json.dumps({"x": 1, "y": [1, 2]}).encode()
    b = b'{ "y": [1,2],\n "x": 1 }'
    assert manifest_digest(a) == manifest_digest(b)
    assert manifest_digest(a) != manifest_digest(b'{"x": 2, "y": [1, 2]}')
