"""snapledger.layouts.restate over the real Restate 1.7.12 samples (tests/restate/samples),
hostile variants of them, and fuzzed bytes and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.layouts.registry import POINTER_OWNERS
from snapledger.layouts.restate import (
    FORMAT,
    POINTER_OWNER,
    SST_MAGIC,
    SST_TAIL_BYTES,
    RestateLatest,
    RestateLocation,
    RestateMetadata,
    RestatePointerError,
    RestateSummary,
    expected_files,
    file_problems,
    fingerprint_problem,
    latest_pointer_key,
    latest_with,
    latest_without,
    normalize_prefix,
    parse_latest,
    parse_latest_key,
    parse_metadata,
    parse_restate_key,
    parse_snapshot_object_key,
    replay_floor,
    snapshot_prefix,
    sst_footer_problem,
    summary,
)
from snapledger.limits import MAX_LSN, MAX_MANIFEST_BYTES, MAX_MANIFEST_FILES, MAX_UINT64

SAMPLES = Path(__file__).resolve().parents[1] / "restate" / "samples"
PREFIX = "cluster-a"
SID = "snap_16JRxlSCK1LJ3Z77LmT8Pap"
OLDER = "snap_13Zuty28ik7UsOjZi8Nwjrr"
OLDEST = "snap_14g462cX9LzlWQTQGw3QbYZ"
FOLDER = f"{PREFIX}/0/lsn_00000000000000001435-{SID}/"
KEY = FOLDER + "metadata.json"
LOCATION = RestateLocation(PREFIX, 0, 1435, SID)
FINGERPRINT = 7494310153217601364


def metadata_doc() -> dict[str, Any]:
    return json.loads((SAMPLES / "metadata.json").read_text())


def latest_doc() -> dict[str, Any]:
    return json.loads((SAMPLES / "latest.json").read_text())


def metadata_of(document: object) -> RestateMetadata:
    return parse_metadata(LOCATION, json.dumps(document).encode())


def rejected_metadata(document: object | bytes) -> str:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    with pytest.raises(ManifestRejectedError) as caught:
        parse_metadata(LOCATION, raw)
    return caught.value.reason


def rejected_latest(document: object | bytes, partition: int | None = None) -> str:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    with pytest.raises(ManifestRejectedError) as caught:
        parse_latest(raw, partition=partition)
    return caught.value.reason


def sample_metadata() -> RestateMetadata:
    return parse_metadata(LOCATION, (SAMPLES / "metadata.json").read_bytes())


def sample_latest() -> RestateLatest:
    return parse_latest((SAMPLES / "latest.json").read_bytes(), partition=0)


# --- keys ----------------------------------------------------------------------------


def test_the_sample_key_parses_and_renders_back():
    assert parse_restate_key(KEY, PREFIX) == LOCATION
    assert LOCATION.metadata_key == KEY
    assert LOCATION.folder == FOLDER
    assert LOCATION.path == f"lsn_00000000000000001435-{SID}"
    assert LOCATION.latest_key == "cluster-a/0/latest.json"
    assert snapshot_prefix(PREFIX, 0, 1435, SID) == FOLDER
    assert latest_pointer_key(PREFIX, 7) == "cluster-a/7/latest.json"
    assert parse_latest_key("cluster-a/7/latest.json", PREFIX) == 7


@pytest.mark.parametrize("prefix", ["cluster-a", "cluster-a/", "/cluster-a", "/cluster-a/"])
def test_the_configured_prefix_is_normalized_as_restate_does(prefix):
    assert parse_restate_key(KEY, prefix) == LOCATION


def test_nested_and_root_prefixes():
    nested = "restate/prod/3/lsn_00000000000000000010-snap_a/metadata.json"
    assert parse_restate_key(nested, "restate/prod") == RestateLocation(
        "restate/prod", 3, 10, "snap_a"
    )
    root = "3/lsn_00000000000000000010-snap_a/metadata.json"
    location = parse_restate_key(root, "")
    assert location == RestateLocation("", 3, 10, "snap_a")
    assert location.metadata_key == root
    assert latest_pointer_key("", 3) == "3/latest.json"
    assert parse_restate_key(nested, "") is None


@pytest.mark.parametrize(
    "key",
    [
        f"{PREFIX}/00/lsn_00000000000000001435-{SID}/metadata.json",  # leading zero
        f"{PREFIX}/1234567890/lsn_00000000000000001435-{SID}/metadata.json",  # 10 digits
        f"{PREFIX}/0/lsn_0000000000000001435-{SID}/metadata.json",  # 19 digits
        f"{PREFIX}/0/lsn_000000000000000001435-{SID}/metadata.json",  # 21 digits
        f"{PREFIX}/0/lsn_{MAX_LSN + 1:020d}-{SID}/metadata.json",  # past int64
        f"{PREFIX}/0/lsn_00000000000000001435-01J00000000000000000000000/metadata.json",
        f"{PREFIX}/0/lsn_00000000000000001435-snap_/metadata.json",
        f"{PREFIX}/0/lsn_00000000000000001435-snap_{'a' * 65}/metadata.json",
        f"{PREFIX}/0/lsn_00000000000000001435-snap_ab-cd/metadata.json",
        f"{PREFIX}/0/00000000000000001435-{SID}/metadata.json",  # native-style folder
        f"{PREFIX}/0/lsn_00000000000000001435-{SID}/metadata.json\n",
        f"{PREFIX}/0/lsn_00000000000000001435-{SID}/sub/metadata.json",
        f"{PREFIX}/0/lsn_00000000000000001435-{SID}/_manifest.json",
        f"{PREFIX}/0/lsn_00000000000000001435-{SID}/000024.sst",
        f"{PREFIX}/0/latest.json",
        f"cluster-b/0/lsn_00000000000000001435-{SID}/metadata.json",  # another prefix
        f"cluster-ab/0/lsn_00000000000000001435-{SID}/metadata.json",  # prefix as a start
        f"x/{PREFIX}/0/lsn_00000000000000001435-{SID}/metadata.json",
        f"{PREFIX}/x/0/lsn_00000000000000001435-{SID}/metadata.json",
        f"{PREFIX}/-1/lsn_00000000000000001435-{SID}/metadata.json",
        f"{PREFIX}/\uff10/lsn_00000000000000001435-{SID}/metadata.json",  # a full-width digit
    ],
)
def test_keys_that_are_not_exactly_a_metadata_key_are_refused(key):
    assert parse_restate_key(key, PREFIX) is None


def test_the_largest_lsn_is_a_key():
    key = f"{PREFIX}/0/lsn_{MAX_LSN:020d}-{SID}/metadata.json"
    assert parse_restate_key(key, PREFIX) == RestateLocation(PREFIX, 0, MAX_LSN, SID)


def test_objects_in_a_snapshot_folder_and_latest_keys():
    assert parse_snapshot_object_key(FOLDER + "000024.sst", PREFIX) == (LOCATION, "000024.sst")
    assert parse_snapshot_object_key(FOLDER + "metadata.json", PREFIX) == (
        LOCATION,
        "metadata.json",
    )
    assert parse_snapshot_object_key(FOLDER, PREFIX) is None
    assert parse_snapshot_object_key("cluster-a/0/latest.json", PREFIX) is None
    assert parse_latest_key(KEY, PREFIX) is None
    assert parse_latest_key("cluster-a/00/latest.json", PREFIX) is None
    assert parse_latest_key("cluster-b/0/latest.json", PREFIX) is None


@pytest.mark.parametrize("prefix", ["a//b", "a/../b", "a\\b", "a%2Fb", "a/./b"])
def test_an_unusable_configured_prefix_is_a_clear_error(prefix):
    with pytest.raises(ValueError, match=r"prefix .* is not usable"):
        normalize_prefix(prefix)
    with pytest.raises(ValueError, match="is not usable"):
        parse_restate_key(KEY, prefix)


def test_the_pointer_is_the_producers():
    assert POINTER_OWNER == POINTER_OWNERS["restate"] == "producer"
    assert POINTER_OWNERS["native"] == "snapledger"


# --- metadata.json -------------------------------------------------------------------


def test_the_real_metadata_parses_exactly():
    metadata = sample_metadata()
    assert metadata.version == "V1"
    assert metadata.cluster_name == "snapledger-test"
    assert metadata.cluster_fingerprint == FINGERPRINT
    assert metadata.partition_id == 0
    assert metadata.node_name == "node-1"
    assert metadata.created_at == "2026-11-26T20:47:51.439Z"
    assert metadata.created.isoformat() == "2026-11-26T20:47:51.439000+00:00"
    assert metadata.snapshot_id == SID
    assert (metadata.key_range.start, metadata.key_range.end) == (0, 4611686018427387903)
    assert metadata.log_id == 0
    assert metadata.min_applied_lsn == 1435
    assert metadata.db_comparator_name == "leveldb.BytewiseComparator"
    assert [f.name for f in metadata.files] == ["/000024.sst", "/000018.sst", "/000019.sst"]
    assert [f.file_name for f in metadata.files] == ["000024.sst", "000018.sst", "000019.sst"]
    assert [f.size for f in metadata.files] == [16716, 11592, 27230]
    assert [f.level for f in metadata.files] == [0, 0, 6]
    first = metadata.files[0]
    assert (first.smallest_seqno, first.largest_seqno) == (17870, 22992)
    assert (first.num_entries, first.num_deletions) == (0, 0)
    assert first.start_key == "64650000000000000000010453454c46"
    assert first.column_family_name == ""
    assert metadata.total_bytes == 55538


def test_the_summary_is_what_the_ledger_records():
    assert summary(LOCATION, sample_metadata()) == RestateSummary(
        partition=0,
        lsn=1435,
        snapshot_id=SID,
        file_count=3,
        total_bytes=55538,
        cluster_name="snapledger-test",
        cluster_fingerprint=FINGERPRINT,
        node_name="node-1",
        created_at="2026-11-26T20:47:51.439Z",
        log_id=0,
        format="restate",
    )
    assert FORMAT == "restate"


def test_fields_a_newer_restate_adds_are_kept_and_optional_ones_may_be_absent():
    document = metadata_doc()
    document["new_field"] = {"nested": [1, 2]}
    document["files"][0]["checksum"] = "abc"
    del document["cluster_fingerprint"], document["log_id"]
    metadata = metadata_of(document)
    assert metadata.cluster_fingerprint is None and metadata.log_id is None
    assert metadata.model_extra == {"new_field": {"nested": [1, 2]}}


def test_a_fingerprint_above_int64_is_a_u64_like_restates():
    metadata = metadata_of(metadata_doc() | {"cluster_fingerprint": MAX_UINT64})
    assert metadata.cluster_fingerprint == MAX_UINT64
    last = metadata_doc() | {"key_range": {"start": 2**63, "end": MAX_UINT64}}
    assert metadata_of(last).key_range.end == MAX_UINT64


def test_a_truncated_metadata_is_rejected():
    raw = (SAMPLES / "metadata.json").read_bytes()
    reason = rejected_metadata(raw[: len(raw) // 2])
    assert "metadata.json is not valid UTF-8 JSON" in reason
    assert "truncated" in reason


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe\x00garbage", b"{'a': 1}", b"NaN"])
def test_bytes_that_are_not_json_are_rejected(raw):
    reason = rejected_metadata(raw)
    assert "metadata.json" in reason


@pytest.mark.parametrize("document", [[], None, "x", 3, {}])
def test_json_that_is_not_an_object_of_the_fields_is_rejected(document):
    assert "is not a Restate 1.7 snapshot metadata" in rejected_metadata(document)


def test_deep_nesting_is_rejected_before_its_schema():
    deep: object = []
    for _ in range(40):
        deep = [deep]
    reason = rejected_metadata(metadata_doc() | {"extra": deep})
    assert "nests deeper than 32 levels" in reason
    assert "nests deeper" in rejected_metadata(b"[" * 100_000 + b"]" * 100_000)


def test_an_integer_of_thousands_of_digits_is_rejected():
    raw = json.dumps(metadata_doc()).replace(str(FINGERPRINT), "9" * 5000).encode()
    assert "integer of thousands of digits" in rejected_metadata(raw)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cluster_fingerprint", MAX_UINT64 + 1),
        ("cluster_fingerprint", 0),
        ("min_applied_lsn", MAX_LSN + 1),
        ("min_applied_lsn", -1),
        ("partition_id", 10**12),
        ("log_id", 2**70),
        ("min_applied_lsn", 1435.0),
        ("min_applied_lsn", "1435"),
        ("partition_id", True),
    ],
)
def test_numbers_past_their_bounds_or_of_another_type_are_rejected_naming_the_field(field, value):
    reason = rejected_metadata(metadata_doc() | {field: value})
    assert f"{field}: " in reason


def test_a_file_size_past_int64_and_sizes_adding_past_it_are_rejected():
    document = metadata_doc()
    document["files"][0]["size"] = 2**63
    assert "files.0.size: Input should be less than or equal to" in rejected_metadata(document)
    document = metadata_doc()
    for entry in document["files"]:
        entry["size"] = 2**62
    assert "the files' sizes add up to" in rejected_metadata(document)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("partition_id", 1, "metadata.json says partition_id=1 but its key"),
        ("min_applied_lsn", 1436, "metadata.json says min_applied_lsn=1436 but its key"),
        ("snapshot_id", OLDER, f"metadata.json says snapshot_id='{OLDER}' but its key"),
    ],
)
def test_a_body_that_disagrees_with_its_key_is_rejected(field, value, expected):
    reason = rejected_metadata(metadata_doc() | {field: value})
    assert expected in reason
    assert KEY in reason


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("/../000024.sst", "'.' and '..' segments are not allowed"),
        ("/..", "'.' and '..' segments are not allowed"),
        ("//000024.sst", "absolute paths are not allowed"),
        ("/sub/000024.sst", "a RocksDB live file name has no folders"),
        ("/metadata.json", "metadata.json is Restate's own file"),
        ("/latest.json", "latest.json is Restate's own file"),
        ("/a b.sst", "only letters, digits"),
        ("/a%2F.sst", "'%' is not allowed"),
        ("/a\\b.sst", "backslashes are not allowed"),
        ("/a\nb.sst", "control characters"),
        ("/", "empty path segments"),
    ],
)
def test_a_file_name_outside_the_snapshot_folder_is_rejected(name, expected):
    document = metadata_doc()
    document["files"][1]["name"] = name
    reason = rejected_metadata(document)
    assert "files[1].name" in reason
    assert expected in reason


def test_a_file_listed_twice_is_rejected():
    document = metadata_doc()
    document["files"][2]["name"] = "000024.sst"  # the same file as "/000024.sst"
    assert "files[2].name '000024.sst' is listed twice" in rejected_metadata(document)


def test_too_many_files_and_too_many_bytes_are_rejected_before_the_schema():
    document = metadata_doc()
    document["files"] = [
        {"name": f"/{i:06d}.sst", "size": 1} for i in range(MAX_MANIFEST_FILES + 1)
    ]
    assert "lists 10,001 files, over the limit of 10,000" in rejected_metadata(document)
    raw = json.dumps(metadata_doc()).encode()
    padded = raw[:-1] + b" " * (MAX_MANIFEST_BYTES + 1 - len(raw)) + b"}"
    assert "over the 1,048,576-byte limit" in rejected_metadata(padded)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", "V2"),
        ("created_at", "yesterday"),
        ("created_at", "2026-13-26T20:47:51.439Z"),
        ("snapshot_id", "01J00000000000000000000000"),
        ("cluster_name", "\u0007bell"),
        ("key_range", {"start": -1, "end": 3}),
        ("files", {"name": "/000024.sst"}),
    ],
)
def test_fields_restate_would_not_read_are_rejected_naming_them(field, value):
    assert f"{field}" in rejected_metadata(metadata_doc() | {field: value})


def test_nanosecond_timestamps_are_read():
    metadata = metadata_of(metadata_doc() | {"created_at": "2026-11-26T20:47:51.439123456Z"})
    assert metadata.created.microsecond == 439123


# --- files ---------------------------------------------------------------------------


def listing() -> dict[str, int]:
    return {
        FOLDER + "000024.sst": 16716,
        FOLDER + "000018.sst": 11592,
        FOLDER + "000019.sst": 27230,
        FOLDER + "metadata.json": 2191,
    }


def test_expected_files_are_the_keys_and_sizes_metadata_names():
    assert expected_files(LOCATION, sample_metadata()) == {
        FOLDER + "000024.sst": 16716,
        FOLDER + "000018.sst": 11592,
        FOLDER + "000019.sst": 27230,
    }
    assert file_problems(expected_files(LOCATION, sample_metadata()), listing()) == []


def test_a_missing_file_and_a_wrong_size_are_each_named():
    listed = listing()
    del listed[FOLDER + "000018.sst"]
    listed[FOLDER + "000019.sst"] = 27000
    problems = file_problems(expected_files(LOCATION, sample_metadata()), listed)
    assert len(problems) == 2
    assert f"'{FOLDER}000018.sst': it is missing" in problems[0]
    assert (
        f"'{FOLDER}000019.sst': it is 27,000 bytes in the store but metadata.json says 27,230"
        in problems[1]
    )


def test_a_file_that_fails_two_checks_is_one_line_naming_both():
    listed = listing()
    listed[FOLDER + "000019.sst"] = 27000
    footers = {FOLDER + "000019.sst": "it does not end with RocksDB's magic"}
    problems = file_problems(expected_files(LOCATION, sample_metadata()), listed, footers)
    assert problems == [
        f"'{FOLDER}000019.sst': it is 27,000 bytes in the store but metadata.json says 27,230: "
        "it was truncated or replaced; it does not end with RocksDB's magic; Restate cannot "
        "restore from it"
    ]


def test_the_real_sst_tail_ends_with_rocksdbs_magic():
    tail = (SAMPLES / "sst-footer.bin").read_bytes()
    assert len(tail) == SST_TAIL_BYTES
    assert sst_footer_problem(tail) is None
    assert sst_footer_problem(tail[-8:]) is None


def test_a_wrong_magic_or_a_short_file_is_a_problem():
    tail = bytearray((SAMPLES / "sst-footer.bin").read_bytes())
    tail[-1] ^= 0xFF
    problem = sst_footer_problem(bytes(tail))
    assert problem is not None
    assert f"0x{SST_MAGIC:016x}" in problem and "0x77e241b785f4cff7" in problem
    legacy = (0xDB4775248B80FB57).to_bytes(8, "little")  # RocksDB's format 0 magic
    assert sst_footer_problem(b"\0" * 56 + legacy) is not None
    assert sst_footer_problem(b"PAR1") == (
        "it is 4 bytes long, shorter than a RocksDB footer: the file is truncated"
    )
    assert sst_footer_problem(b"") is not None


def test_a_snapshot_of_another_cluster_fingerprint_is_rejected_by_restates_rule():
    metadata = sample_metadata()
    assert fingerprint_problem(None, metadata) is None
    assert fingerprint_problem(FINGERPRINT, metadata) is None
    problem = fingerprint_problem(FINGERPRINT + 1, metadata)
    assert problem is not None
    assert "another cluster" in problem and str(FINGERPRINT) in problem
    unfingerprinted = metadata_of(
        {k: v for k, v in metadata_doc().items() if k != "cluster_fingerprint"}
    )
    assert fingerprint_problem(FINGERPRINT + 1, unfingerprinted) is None  # Restate skips it too
    named = fingerprint_problem(FINGERPRINT, metadata, lineage_cluster_name="prod")
    assert named is not None and "'snapledger-test'" in named and "'prod'" in named
    assert (
        fingerprint_problem(FINGERPRINT, metadata, lineage_cluster_name="snapledger-test") is None
    )


# --- latest.json ---------------------------------------------------------------------


def test_the_real_latest_parses_exactly():
    latest = sample_latest()
    assert latest.version == "V2"
    assert (latest.partition_id, latest.log_id) == (0, 0)
    assert latest.cluster_name == "snapledger-test"
    assert latest.cluster_fingerprint == FINGERPRINT
    assert latest.node_name == "node-1"
    assert latest.created_at == "2026-11-26T20:47:51.439Z"
    assert latest.snapshot_id == SID
    assert latest.min_applied_lsn == 1435
    assert latest.path == f"lsn_00000000000000001435-{SID}"
    assert [
        (r.snapshot_id, r.min_applied_lsn, r.created_at, r.path) for r in latest.retained()
    ] == [
        (SID, 1435, "2026-11-26T20:47:51.439Z", f"lsn_00000000000000001435-{SID}"),
        (OLDER, 1038, "2026-11-26T20:47:49.313Z", f"lsn_00000000000000001038-{OLDER}"),
        (OLDEST, 803, "2026-11-26T20:47:48.436Z", f"lsn_00000000000000000803-{OLDEST}"),
    ]
    assert latest.retained_ids == {SID, OLDER, OLDEST}
    assert replay_floor(latest) == 803


def test_a_v1_latest_retains_only_the_snapshot_it_names():
    document = {k: v for k, v in latest_doc().items() if k not in ("retained_snapshots", "log_id")}
    latest = parse_latest(json.dumps(document | {"version": "V1"}).encode())
    assert [r.snapshot_id for r in latest.retained()] == [SID]
    assert replay_floor(latest) == 1435
    with pytest.raises(RestatePointerError, match="does not retain"):
        latest_with(latest, OLDER)


def test_a_latest_of_another_partition_or_a_wrong_path_is_rejected():
    reason = rejected_latest(latest_doc(), partition=3)
    assert "latest.json says partition_id=0 but it is partition 3's pointer" in reason
    assert "path '../other' is not the folder of snapshot" in rejected_latest(
        latest_doc() | {"path": "../other"}
    )
    document = latest_doc()
    document["retained_snapshots"][2]["path"] = f"lsn_00000000000000000804-{OLDEST}"
    assert "retained_snapshots.2: " in rejected_latest(document)


@pytest.mark.parametrize(
    "raw",
    [
        (SAMPLES / "latest.json").read_bytes()[:100],
        b"[" * 50 + b"]" * 50,
        b"null",
        json.dumps(latest_doc() | {"min_applied_lsn": 2**64}).encode(),
        json.dumps(latest_doc() | {"version": "V3"}).encode(),
        json.dumps(latest_doc() | {"retained_snapshots": [{"snapshot_id": SID}]}).encode(),
    ],
)
def test_hostile_latest_files_are_rejected(raw):
    assert "latest.json" in rejected_latest(raw)


def test_latest_with_repoints_to_a_retained_snapshot_keeping_unknown_fields():
    document = latest_doc()
    document["future_field"] = {"a": [1, 2.5, None]}
    document["retained_snapshots"][1]["future_entry_field"] = "kept"
    latest = parse_latest(json.dumps(document).encode())
    rewritten = json.loads(latest_with(latest, OLDER))
    assert rewritten == document | {
        "snapshot_id": OLDER,
        "min_applied_lsn": 1038,
        "created_at": "2026-11-26T20:47:49.313Z",
        "path": f"lsn_00000000000000001038-{OLDER}",
    }
    reparsed = parse_latest(json.dumps(rewritten).encode(), partition=0)
    assert reparsed.snapshot_id == OLDER
    assert replay_floor(reparsed) == 803


def test_latest_with_keeps_absent_fields_absent():
    document = {k: v for k, v in latest_doc().items() if k not in ("cluster_fingerprint", "log_id")}
    rewritten = json.loads(latest_with(parse_latest(json.dumps(document).encode()), OLDEST))
    assert "cluster_fingerprint" not in rewritten and "log_id" not in rewritten
    assert rewritten["snapshot_id"] == OLDEST


def test_latest_with_refuses_a_snapshot_restate_no_longer_retains():
    with pytest.raises(RestatePointerError) as caught:
        latest_with(sample_latest(), "snap_gone")
    assert "does not retain snapshot 'snap_gone'" in caught.value.reason


def test_latest_without_drops_deleted_snapshots_but_never_the_named_one():
    document = latest_doc() | {"future_field": 1}
    latest = parse_latest(json.dumps(document).encode())
    rewritten = json.loads(latest_without(latest, [OLDEST, "snap_unknown"]))
    assert rewritten == document | {"retained_snapshots": document["retained_snapshots"][:2]}
    assert replay_floor(parse_latest(json.dumps(rewritten).encode())) == 1038
    with pytest.raises(RestatePointerError, match=r"the one Restate's latest.json .* names"):
        latest_without(latest, {OLDER, SID})


def test_healing_composes_repoint_then_drop():
    """Repoint at the older one, then drop the broken newer one (it is no longer named)."""
    healed = parse_latest(latest_with(sample_latest(), OLDER), partition=0)
    pruned = parse_latest(latest_without(healed, [SID]), partition=0)
    assert pruned.snapshot_id == OLDER
    assert [r.snapshot_id for r in pruned.retained()] == [OLDER, OLDEST]


# --- fuzzing -------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def only_rejected(raw: bytes) -> None:
    for parse in (lambda: parse_metadata(LOCATION, raw), lambda: parse_latest(raw, partition=0)):
        try:
            parse()
        except ManifestRejectedError as rejected:
            assert rejected.reason


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_arbitrary_bytes_are_only_ever_rejected(raw):
    only_rejected(raw)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_arbitrary_json_is_only_ever_rejected(document):
    only_rejected(json.dumps(document).encode())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_samples_with_any_field_replaced_are_parsed_or_rejected(data):
    for base in (metadata_doc(), latest_doc()):
        document = dict(base)
        field = data.draw(st.sampled_from(sorted(document)))
        document[field] = data.draw(JSON)
        if (
            data.draw(st.booleans())
            and isinstance(document.get("files"), list)
            and document["files"]
            and isinstance(document["files"][0], dict)
            and document["files"][0]
        ):
            entry = dict(document["files"][0])
            entry[data.draw(st.sampled_from(sorted(entry)))] = data.draw(JSON)
            document["files"] = [entry]
        only_rejected(json.dumps(document).encode())
