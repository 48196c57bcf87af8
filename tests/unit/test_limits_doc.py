"""docs/limits.md against the code: each row's value is the bound in limits.py, every bound
has a row, and each bound is probed: the value itself is accepted, one past it refused."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from snapledger import limits
from snapledger.core.manifest_rules import ManifestRejectedError, parse_manifest
from snapledger.core.parquet_footer import FooterIncompleteError, ParquetFooterError, parse_footer
from snapledger.errors import InvalidKeyError
from snapledger.layout import SnapshotLocation, parse_manifest_key, parse_segment_name

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
SID = "01J00000000000000000000000"
ROW = re.compile(r"^\| `(?P<name>MAX_[A-Z0-9_]+)` \| (?P<value>[0-9,]+)")
#: Names in limits.py that are another bound's alias, not a row of their own.
ALIASES = {"MAX_INT64"}


def rows() -> dict[str, int]:
    found = {}
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            found[match["name"]] = int(match["value"].replace(",", ""))
    return found


def manifest(lsn: int = 300, **fields: object) -> dict[str, object]:
    return {
        "format_version": 1,
        "stream": "orders",
        "partition": 3,
        "lsn": lsn,
        "snapshot_id": SID,
        "epoch": 1,
        "producer": {"name": "t"},
        "source": {"kind": "processor"},
        "files": [{"path": "a", "size": 1}],
        **fields,
    }


def parses(document: dict[str, object] | bytes, lsn: int = 300, partition: int = 3) -> bool:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    try:
        parse_manifest(SnapshotLocation("orders", partition, lsn, SID), raw)
    except ManifestRejectedError:
        return False
    return True


def lsn_ok(n: int) -> bool:
    key = f"snapshots/orders/3/{n:020d}-{SID}/_manifest.json"
    try:
        location = parse_manifest_key(key)
    except InvalidKeyError:
        return False
    return parses(manifest(lsn=n), lsn=location.lsn) and (
        parse_segment_name(f"{0:020d}-{n:020d}.parquet") is not None
    )


def depth_ok(depth: int) -> bool:
    """Whether a manifest nesting ``depth`` levels passes the depth check (its schema
    refuses the nested value anyway: the depth is checked first, on any JSON)."""
    raw = json.dumps(manifest(source={"kind": "processor", "job_id": "__X__"}))
    nested = raw.replace('"__X__"', "[" * (depth - 2) + "]" * (depth - 2)).encode()
    try:
        parse_manifest(SnapshotLocation("orders", 3, 300, SID), nested)
    except ManifestRejectedError as rejected:
        return "nests deeper" not in rejected.reason
    return True


def files(n: int) -> dict[str, object]:
    return manifest(files=[{"path": f"p{i}", "size": 1} for i in range(n)])


def manifest_of_size(n: int) -> bytes:
    raw = json.dumps(manifest(producer={"name": "t", "version": None}))
    return (raw[:-1] + " " * (n - len(raw)) + "}").encode()


def footer_ok(length: int) -> bool:
    tail = b"\0" * 16 + length.to_bytes(4, "little") + b"PAR1"
    try:
        parse_footer(tail, length + 64)
    except FooterIncompleteError:
        return True  # believed: it asks for the footer
    except ParquetFooterError:
        return False
    return True


def offsets_of(n: int) -> dict[str, object]:
    # names of 200 bytes (+20 counted for the value) filling ``n`` bytes
    count, rest = divmod(n, 220)
    names = {f"{i:0200d}": 1 for i in range(count)}
    if rest > 20:
        names["x" * (rest - 20)] = 1
    return manifest(offsets=names)


def policy_hours_ok(n: int) -> bool:
    """Whether ``min_age_hours`` = ``n`` passes the console's payload and ``set_policy``'s
    parse (``max_age_hours`` has the same bound)."""
    from snapledger.entrypoints.gc import parse_gc
    from snapledger.errors import InvalidRequestError
    from snapledger.models.policy import parse_policy

    try:
        parse_gc({"action": "policy_set", "stream": "orders", "min_age_hours": n})
        parse_policy({"min_age_hours": n, "max_age_hours": n})
    except (InvalidRequestError, ValueError):
        return False
    return True


def hold_hours_ok(n: int) -> bool:
    from datetime import UTC, datetime, timedelta

    from snapledger.core.gc_rules import hold_expiry_problem

    now = datetime(2026, 11, 26, tzinfo=UTC)
    return hold_expiry_problem(now + timedelta(hours=n), now) is None


def sort_key_ok(n: int) -> bool:
    """Whether an unplaceable key whose ``KEY#`` sort key is ``n`` UTF-8 bytes is kept
    verbatim (2-byte characters: bytes are counted, not characters)."""
    from snapledger.adapters.dynamodb_codec import UNPLACEABLE_PREFIX, unplaceable_sk

    room = n - len(UNPLACEABLE_PREFIX.encode()) - len("snapshots/")
    key = "snapshots/" + "é" * (room // 2) + "x" * (room % 2)
    return unplaceable_sk(key) == UNPLACEABLE_PREFIX + key


def cursor_chars_ok(n: int) -> bool:
    """Whether a cursor of ``n`` characters is decoded at all (not refused for its length)."""
    from snapledger.adapters.dynamodb_cursors import decode_cursor
    from snapledger.adapters.dynamodb_jobs import JOBS_CURSOR
    from snapledger.errors import InvalidRequestError

    try:
        decode_cursor("A" * n, JOBS_CURSOR)
    except InvalidRequestError as refused:
        return "characters" not in str(refused)
    return True


def restate_fingerprint_ok(n: int) -> bool:
    """Whether a Restate metadata.json (the real sample) with ``cluster_fingerprint`` = ``n``
    is registered (its key_range ends have the same bound)."""
    from snapledger.layouts.restate import RestateLocation, parse_metadata

    sample = Path(__file__).resolve().parents[1] / "restate" / "samples" / "metadata.json"
    document = json.loads(sample.read_text()) | {"cluster_fingerprint": n}
    location = RestateLocation("cluster-a", 0, document["min_applied_lsn"], document["snapshot_id"])
    try:
        parse_metadata(location, json.dumps(document).encode())
    except ManifestRejectedError:
        return False
    return True


def pointer_bytes_ok(n: int) -> bool:
    """Whether a valid ``latest.json`` padded to ``n`` bytes is read as a pointer."""
    from snapledger.models.pointer import LatestPointer, PointerUnreadableError, parse_pointer

    raw = json.dumps(
        {
            "format_version": 1,
            "stream": "orders",
            "partition": 3,
            "snapshot_id": SID,
            "lsn": 300,
            "epoch": 1,
            "prefix": f"snapshots/orders/3/{300:020d}-{SID}/",
            "manifest_key": f"snapshots/orders/3/{300:020d}-{SID}/_manifest.json",
            "format": "kv-parquet",
            "files": [],
            "registered_at": "2026-11-26T00:00:00Z",
        }
    )
    try:
        parse_pointer(LatestPointer, (raw[:-1] + " " * (n - len(raw)) + "}").encode())
    except PointerUnreadableError:
        return False
    return True


def published_bytes_ok(n: int) -> bool:
    """Whether a job publishes an object of ``n`` bytes on S3 (it is never read here)."""
    from jobs.create_only import size_problem

    return size_problem("s3://bucket/snapshots/x/part-00000.parquet", n) is None


def _broken(problems: tuple[str, ...]) -> bool:
    from pydantic import ValidationError

    from snapledger.models.commands import RecordBrokenSnapshot

    try:
        RecordBrokenSnapshot(stream="s", partition=0, lsn=1, snapshot_id=SID, problems=problems)
    except ValidationError:
        return False
    return True


def recorded_problems_ok(n: int) -> bool:
    """Whether a snapshot found broken may be recorded with ``n`` problem lines."""
    return _broken(("a file is missing",) * n)


def problem_chars_ok(n: int) -> bool:
    """Whether a problem line of ``n`` characters may be recorded."""
    return _broken(("x" * n,))


def input_partitions_ok(n: int) -> bool:
    """Whether a Kafka Streams snapshot naming ``n`` input topic-partitions is written (the
    snapshotter's check); one it writes must be accepted by registration."""
    from snapledger.errors import InvalidRequestError
    from snapledger.kafka_streams.snapshotter import snapshot_offsets

    try:
        offsets = snapshot_offsets("orders", 3, 300, {f"in-{i}": i for i in range(n)})
    except InvalidRequestError:
        return False
    assert parses(manifest(offsets=offsets)), f"{n} input offsets written, then REJECTED"
    return True


def producer_registration_ok(**fields: object) -> bool:
    """Whether the launch function's producer-offsets registration payload is valid."""
    from pydantic import ValidationError

    from snapledger.entrypoints.producer_offsets import RegisterProducerOffsets

    payload = {
        "action": "producer_offsets_register",
        "producer_id": "job-1",
        "offsets": [{"table_id": 1, "bucket": 0, "offset": 0}],
        **fields,
    }
    try:
        RegisterProducerOffsets.model_validate(payload)
    except ValidationError:
        return False
    return True


def references(n: int, *, path_chars: int = 12) -> dict[str, object]:
    """A manifest with ``n`` references whose paths are ``path_chars`` long."""
    paths = [f"shared/{i:0{path_chars - 7}d}" for i in range(n)]
    return manifest(format="opaque", references=[{"path": p, "size": 1} for p in paths])


def new_shared_age_ok(seconds: int) -> bool:
    """Whether a shared file written ``seconds`` before its registration counts as new
    (usable without a registered snapshot referencing it)."""
    from datetime import UTC, datetime, timedelta

    from snapledger.core.references import aged_shared

    now = datetime(2026, 12, 1, tzinfo=UTC)
    return not aged_shared([("shared/a", now - timedelta(seconds=seconds))], now)


def sharing_snapshots_ok(n: int) -> bool:
    """Whether a lineage already keeping ``n - 1`` snapshots that reference files registers
    one more (the ``n``th)."""
    from datetime import UTC, datetime

    from snapledger.core.registration import decide_register
    from snapledger.core.state import LineageState
    from snapledger.models.commands import ManifestSummary, RegisterSnapshot
    from snapledger.models.ledger import Head

    head = Head(stream="orders", partition=3, sharing=tuple(f"SNAP#{i}" for i in range(n - 1)))
    summary = ManifestSummary(
        epoch=1, file_count=0, total_bytes=0, format="opaque", references=("shared/a",)
    )
    command = RegisterSnapshot(
        stream="orders",
        partition=3,
        lsn=300,
        snapshot_id=SID,
        manifest_key=f"snapshots/orders/3/{300:020d}-{SID}/_manifest.json",
        manifest_digest="sha256:0",
        summary=summary,
    )
    events = decide_register(LineageState(head=head), command, datetime(2026, 12, 1, tzinfo=UTC))
    return events[0].type == "SnapshotRegistered"


PROBES: dict[str, Callable[[int], bool]] = {
    "MAX_REFERENCES": lambda n: parses(references(n)),
    "MAX_REFERENCE_PATH_CHARS": lambda n: parses(references(1, path_chars=n)),
    "MAX_NEW_SHARED_FILE_AGE_S": new_shared_age_ok,
    "MAX_SHARING_SNAPSHOTS": sharing_snapshots_ok,
    "MAX_LSN": lsn_ok,
    "MAX_EPOCH": lambda n: parses(manifest(epoch=n)),
    "MAX_COUNT": lambda n: parses(manifest(files=[{"path": "a", "size": n, "rows": n}])),
    "MAX_PARTITION": lambda n: parses(manifest(partition=n), partition=n),
    "MAX_UINT64": restate_fingerprint_ok,
    "MAX_MANIFEST_BYTES": lambda n: parses(manifest_of_size(n)),
    "MAX_MANIFEST_FILES": lambda n: parses(files(n)),
    "MAX_JSON_DEPTH": depth_ok,
    "MAX_POINTER_BYTES": pointer_bytes_ok,
    "MAX_OFFSETS": lambda n: parses(manifest(offsets={str(i): i for i in range(n)})),
    "MAX_OFFSETS_BYTES": lambda n: parses(offsets_of(n)),
    "MAX_INPUT_PARTITIONS": input_partitions_ok,
    "MAX_PARQUET_FOOTER_BYTES": footer_ok,
    "MAX_HOURS": policy_hours_ok,
    "MAX_HOLD_HOURS": hold_hours_ok,
    "MAX_PRODUCER_ID_CHARS": lambda n: producer_registration_ok(producer_id="j" * n),
    "MAX_PRODUCER_OFFSETS": lambda n: producer_registration_ok(
        offsets=[{"table_id": 1, "bucket": b, "offset": 0} for b in range(n)]
    ),
    "MAX_PRODUCER_OFFSETS_TTL_SECONDS": lambda n: producer_registration_ok(ttl_seconds=n),
    "MAX_PUBLISHED_OBJECT_BYTES": published_bytes_ok,
    "MAX_SORT_KEY_BYTES": sort_key_ok,
    "MAX_RECORDED_PROBLEMS": recorded_problems_ok,
    "MAX_PROBLEM_CHARS": problem_chars_ok,
    "MAX_CURSOR_CHARS": cursor_chars_ok,
    "MAX_RETENTION_MS": lambda n: parses(
        manifest(changelog={"log_start_offset": 0, "end_offset": 1, "delete_retention_ms": n})
    ),
}


def test_every_bound_in_the_code_has_a_row_with_its_value():
    declared = {
        name: value
        for name, value in vars(limits).items()
        if name.startswith("MAX_") and name not in ALIASES
    }
    documented = rows()
    assert documented == {name: int(value) for name, value in declared.items()}


@pytest.mark.parametrize("name", sorted(rows()))
def test_each_bound_accepts_its_value_and_refuses_one_past_it(name):
    probe = PROBES[name]  # a row without a probe is a claim nothing checks
    bound = getattr(limits, name)
    assert probe(int(bound)), f"{name}: {bound} itself is refused"
    assert not probe(int(bound) + 1), f"{name}: {bound + 1} is accepted"
