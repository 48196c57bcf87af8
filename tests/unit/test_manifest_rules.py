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


def test_more_than_10000_files_is_refused_with_a_clear_message():
    # Issue 27 row 10: 10,001 files fit well within 1 MiB, but registration checks each
    # file's checksum and footer (a request each), so the count is bounded on its own.
    raw = json.dumps(document([{"path": f"p{i}", "size": 1} for i in range(10_001)])).encode()
    assert len(raw) < 1024 * 1024
    with pytest.raises(
        ManifestRejectedError, match="lists 10,001 files, over the limit of 10,000"
    ) as err:
        parse_manifest(LOCATION, raw)
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


# Issue 27 row 1: hostile JSON is REJECTED with its reason, never raised.


def test_json_nested_past_the_parser_is_rejected_not_raised():
    raw = b"[" * 300_000  # 300 KB, under the 1 MiB limit: RecursionError in json.loads
    with pytest.raises(ManifestRejectedError, match="nests deeper than 32 levels"):
        parse_manifest(LOCATION, raw)
    assert manifest_digest(raw).startswith("sha256:")


def test_json_nested_within_the_parser_but_past_the_bound_is_rejected():
    doc = document([{"path": "a", "size": 1}])
    doc["source"] = {"kind": "processor", "x": json.loads("[" * 40 + "]" * 40)}
    with pytest.raises(ManifestRejectedError, match="nests deeper than 32 levels"):
        parse_manifest(LOCATION, json.dumps(doc).encode())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epoch", 10**38 + 1),  # 39 digits: decimal.Inexact in the DynamoDB serializer
        ("epoch", 2**63),
        ("row_count", 10**39),
        ("generation", 2**63),
        ("files.rows", 10**39),
        ("files.size", 2**63),
    ],
)
def test_integers_past_int64_are_rejected_naming_the_field(field, value):
    doc = document([{"path": "a", "size": 1}])
    if field.startswith("files."):
        doc["files"][0][field.removeprefix("files.")] = value
    else:
        doc[field] = value
    with pytest.raises(ManifestRejectedError, match=field.split(".")[-1]) as err:
        parse_manifest(LOCATION, json.dumps(doc).encode())
    assert "9223372036854775807" in err.value.reason.replace(",", "").replace("_", "")
    # the epoch recorded with the rejection is only ever one within its bound
    assert err.value.epoch in (None, 7)


def test_an_integer_of_thousands_of_digits_is_rejected_with_the_bound():
    raw = json.dumps(document([])).replace('"epoch": 7', '"epoch": ' + "9" * 5000).encode()
    with pytest.raises(ManifestRejectedError, match="integer of thousands of digits"):
        parse_manifest(LOCATION, raw)


def test_sizes_that_add_up_past_int64_are_rejected():
    files = [{"path": f"p{i}", "size": 2**62} for i in range(3)]
    with pytest.raises(ManifestRejectedError, match="sizes add up"):
        parse_manifest(LOCATION, json.dumps(document(files)).encode())


def test_offsets_too_large_for_a_ledger_item_are_rejected():
    doc = document([{"path": "a", "size": 1}])
    doc["offsets"] = {f"{'t' * 200}-{i}": i for i in range(1_000)}  # ~220 KB
    with pytest.raises(ManifestRejectedError, match="offsets take about"):
        parse_manifest(LOCATION, json.dumps(doc).encode())


def test_a_key_naming_an_lsn_past_int64_is_not_a_snapshot_key():
    from snapledger.errors import InvalidKeyError
    from snapledger.layout import parse_manifest_key

    key = f"snapshots/orders/3/{10**19:020d}-{SID}/_manifest.json"
    with pytest.raises(InvalidKeyError, match="above the largest LSN 9223372036854775807"):
        parse_manifest_key(key)
    assert parse_manifest_key(f"snapshots/orders/3/{2**63 - 1:020d}-{SID}/_manifest.json")
