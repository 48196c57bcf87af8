"""Restate 1.7's snapshot layout, adopted unchanged: keys, ``metadata.json``, Restate's
``latest.json``, and the checks of a snapshot's files. Pure: the I/O is the services'.

```
{prefix}/{partition}/lsn_{lsn:020d}-{snapshot_id}/{NNNNNN}.sst ... metadata.json
{prefix}/{partition}/latest.json
```

``{prefix}`` is the path of Restate's ``destination = "s3://bucket/{prefix}"`` (empty for the
bucket's root); Restate writes ``metadata.json`` after the SSTs, then repoints
``latest.json`` (its "V2": the snapshot it restores from, and ``retained_snapshots``,
newest first) by ETag compare-and-swap. The pointer's owner is Restate: snapledger writes
``latest.json`` only to heal or on an operator's restore-from-chosen (``latest_with``), or
to drop the snapshots GC deleted from ``retained_snapshots`` (``latest_without``), always by
compare-and-swap.

Every malformed ``metadata.json`` or ``latest.json`` is refused with ``ManifestRejectedError``
(a reason a Restate operator can act on), never another exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from snapledger.core.manifest_rules import ManifestRejectedError, join_problems, json_depth
from snapledger.layout import path_problem
from snapledger.limits import (
    MAX_COUNT,
    MAX_INT64,
    MAX_JSON_DEPTH,
    MAX_LSN,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
    MAX_PARTITION,
    MAX_UINT64,
)

__all__ = [
    "FORMAT",
    "LATEST_NAME",
    "METADATA_NAME",
    "NAME",
    "POINTER_OWNER",
    "SNAPSHOT_ID_PATTERN",
    "SST_MAGIC",
    "SST_SUFFIX",
    "SST_TAIL_BYTES",
    "RestateKeyRange",
    "RestateLatest",
    "RestateLocation",
    "RestateMetadata",
    "RestatePointerError",
    "RestateRetained",
    "RestateSstFile",
    "RestateSummary",
    "expected_files",
    "file_problems",
    "fingerprint_problem",
    "latest_pointer_key",
    "latest_with",
    "latest_without",
    "metadata_key",
    "normalize_prefix",
    "parse_latest",
    "parse_latest_key",
    "parse_metadata",
    "parse_restate_key",
    "parse_snapshot_object_key",
    "parse_timestamp",
    "partition_prefix",
    "replay_floor",
    "snapshot_path",
    "snapshot_prefix",
    "sst_footer_problem",
    "summary",
]

from snapledger.layouts.restate_keys import (
    FORMAT,
    LATEST_NAME,
    METADATA_NAME,
    NAME,
    POINTER_OWNER,
    SNAPSHOT_ID_PATTERN,
    SST_MAGIC,
    SST_MAGIC_BYTES,
    SST_SUFFIX,
    SST_TAIL_BYTES,
    RestateLocation,
    latest_pointer_key,
    metadata_key,
    normalize_prefix,
    parse_latest_key,
    parse_restate_key,
    parse_snapshot_object_key,
    partition_prefix,
    snapshot_path,
    snapshot_prefix,
)

#: RocksDB live file names, after their leading '/': flat, and in characters object_store
#: keeps as they are (it percent-encodes others in the key, so they would not be found).
_FILE_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
_TIMESTAMP_RE = re.compile(
    r"(?P<second>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?P<fraction>\.[0-9]{1,9})?(?P<zone>Z|[+-][0-9]{2}:[0-9]{2})"
)


# --- the documents -------------------------------------------------------------------


def parse_timestamp(text: str) -> datetime:
    """A Restate ``created_at`` (RFC 3339, e.g. ``2026-11-26T20:47:51.439Z``, up to
    nanoseconds) as an aware datetime (to the microsecond). Raises ValueError otherwise."""
    match = _TIMESTAMP_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:64]!r} is not a timestamp like 2026-11-26T20:47:51.439Z")
    fraction = (match["fraction"] or "")[:7]
    zone = "+00:00" if match["zone"] == "Z" else match["zone"]
    return datetime.fromisoformat(match["second"] + fraction + zone)


def _timestamp(text: str) -> str:
    parse_timestamp(text)
    return text


def _text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)") from None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("control characters are not allowed")
    return value


Text = Annotated[str, Field(max_length=1024), AfterValidator(_text)]
Timestamp = Annotated[str, AfterValidator(_timestamp)]
SnapshotId = Annotated[str, Field(pattern=rf"^{SNAPSHOT_ID_PATTERN}$")]
Lsn = Annotated[int, Field(ge=0, le=MAX_LSN)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Partition = Annotated[int, Field(ge=0, le=MAX_PARTITION)]
LogId = Annotated[int, Field(ge=0, le=MAX_INT64)]
Uint64 = Annotated[int, Field(ge=0, le=MAX_UINT64)]
#: Restate's ``ClusterFingerprint`` is a non-zero u64; snapshots of old versions have none.
Fingerprint = Annotated[int, Field(ge=1, le=MAX_UINT64)]
Hex = Annotated[str, Field(pattern=r"^[0-9A-Fa-f]*$")]


class _Restate(BaseModel):
    """Frozen; strict about the types of the fields it names (as Restate's serde is), and
    keeps the fields it does not know (a newer Restate may add some)."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True, defer_build=True)


class RestateKeyRange(_Restate):
    start: Uint64
    end: Uint64


class RestateSstFile(_Restate):
    """One RocksDB live file of the snapshot (``name`` as RocksDB gives it: "/000024.sst")."""

    name: Annotated[str, Field(min_length=1, max_length=1024)]
    size: Count
    column_family_name: Text | None = None
    directory: Annotated[str, Field(max_length=4096)] | None = None
    level: Annotated[int, Field(ge=0, le=MAX_INT64)] | None = None
    start_key: Hex | None = None
    end_key: Hex | None = None
    smallest_seqno: Count | None = None
    largest_seqno: Count | None = None
    num_entries: Count | None = None
    num_deletions: Count | None = None

    @property
    def file_name(self) -> str:
        """The name relative to the snapshot's folder (without RocksDB's leading '/')."""
        return self.name[1:] if self.name.startswith("/") else self.name


class RestateMetadata(_Restate):
    """A snapshot's ``metadata.json`` (Restate's ``PartitionSnapshotMetadata``, "V1")."""

    version: Literal["V1"]
    cluster_name: Text
    cluster_fingerprint: Fingerprint | None = None
    partition_id: Partition
    node_name: Text
    created_at: Timestamp
    snapshot_id: SnapshotId
    key_range: RestateKeyRange
    log_id: LogId | None = None
    min_applied_lsn: Lsn
    db_comparator_name: Text
    files: Annotated[list[RestateSstFile], Field(max_length=MAX_MANIFEST_FILES)]

    @property
    def total_bytes(self) -> int:
        return sum(entry.size for entry in self.files)

    @property
    def created(self) -> datetime:
        return parse_timestamp(self.created_at)


class RestateRetained(_Restate):
    """One of latest.json's ``retained_snapshots``."""

    snapshot_id: SnapshotId
    min_applied_lsn: Lsn
    created_at: Timestamp
    path: Annotated[str, Field(max_length=1024)]

    @model_validator(mode="after")
    def _path_is_the_folder(self) -> RestateRetained:
        _check_path(self.path, self.min_applied_lsn, self.snapshot_id)
        return self


class RestateLatest(_Restate):
    """A partition's ``latest.json`` (Restate's ``LatestSnapshot``, "V1" or "V2"): the
    snapshot Restate restores from, and the ones it still retains, newest first."""

    version: Literal["V1", "V2"]
    partition_id: Partition
    log_id: LogId | None = None
    cluster_name: Text
    cluster_fingerprint: Fingerprint | None = None
    node_name: Text
    created_at: Timestamp
    snapshot_id: SnapshotId
    min_applied_lsn: Lsn
    path: Annotated[str, Field(max_length=1024)]
    retained_snapshots: list[RestateRetained] = Field(default_factory=list)

    @model_validator(mode="after")
    def _path_is_the_folder(self) -> RestateLatest:
        _check_path(self.path, self.min_applied_lsn, self.snapshot_id)
        return self

    def retained(self) -> tuple[RestateRetained, ...]:
        """The snapshots Restate retains, newest first: ``retained_snapshots``, or (a V1
        pointer, none listed) the one it names, as Restate reads it."""
        if self.retained_snapshots:
            return tuple(self.retained_snapshots)
        return (
            RestateRetained(
                snapshot_id=self.snapshot_id,
                min_applied_lsn=self.min_applied_lsn,
                created_at=self.created_at,
                path=self.path,
            ),
        )

    @property
    def retained_ids(self) -> frozenset[str]:
        return frozenset(entry.snapshot_id for entry in self.retained())


def _check_path(path: str, lsn: int, snapshot_id: str) -> None:
    expected = snapshot_path(lsn, snapshot_id)
    if path != expected:
        raise ValueError(
            f"path {path[:128]!r} is not the folder of snapshot {snapshot_id} at LSN {lsn} "
            f"({expected!r})"
        )


# --- parsing -------------------------------------------------------------------------


def _load(raw: bytes, what: str) -> Any:
    """``raw`` as JSON, within the size and depth bounds, else ManifestRejectedError."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestRejectedError(
            f"{what} is {len(raw):,} bytes, over the {MAX_MANIFEST_BYTES:,}-byte limit "
            "(docs/limits.md): a partition store of this many SST files is beyond what "
            "snapledger registers; compact it into fewer, larger files"
        )
    too_deep = False
    try:
        document = json.loads(raw)
    except RecursionError:  # nested too deep for the parser: refused just below
        document, too_deep = None, True
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a 4,300-digit integer
        if "integer string conversion" in str(exc):
            raise ManifestRejectedError(
                f"{what} holds an integer of thousands of digits: Restate's numbers are at "
                f"most {MAX_UINT64:,} (docs/limits.md)"
            ) from None
        raise ManifestRejectedError(
            f"{what} is not valid UTF-8 JSON ({str(exc)[:200]}): Restate writes it whole, so "
            "it was truncated or edited by hand; Restate cannot restore from it either"
        ) from None
    if too_deep or json_depth(document) > MAX_JSON_DEPTH:
        raise ManifestRejectedError(
            f"{what}'s JSON nests deeper than {MAX_JSON_DEPTH} levels (Restate's nests 3): "
            "it is not a file Restate wrote"
        )
    return document


def _describe(exc: ValidationError) -> str:
    return join_problems(
        [
            f"{'.'.join(str(part) for part in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        ]
    )


def parse_metadata(location: RestateLocation, raw: bytes) -> RestateMetadata:
    """Parse a snapshot's ``metadata.json`` (``raw``, read from ``location.metadata_key``)
    and check it against its key and its file names; raise ManifestRejectedError with the
    reason otherwise (and never another exception, whatever ``raw`` holds)."""
    document = _load(raw, METADATA_NAME)
    files = document.get("files") if isinstance(document, dict) else None
    if isinstance(files, list) and len(files) > MAX_MANIFEST_FILES:
        raise ManifestRejectedError(
            f"metadata.json lists {len(files):,} files, over the limit of "
            f"{MAX_MANIFEST_FILES:,} (docs/limits.md): compact the partition store into "
            "fewer, larger SST files"
        )
    try:
        metadata = RestateMetadata.model_validate(document)
    except ValidationError as exc:
        raise ManifestRejectedError(
            "metadata.json is not a Restate 1.7 snapshot metadata (format V1): " + _describe(exc)
        ) from None
    problems = [*_key_disagreements(location, metadata), *_file_name_problems(metadata)]
    total = metadata.total_bytes
    if total > MAX_COUNT:
        problems.append(f"the files' sizes add up to {total:,}, above {MAX_COUNT:,} bytes")
    if problems:
        raise ManifestRejectedError(join_problems(problems))
    return metadata


def _key_disagreements(location: RestateLocation, metadata: RestateMetadata) -> list[str]:
    pairs = (
        ("partition_id", metadata.partition_id, location.partition),
        ("min_applied_lsn", metadata.min_applied_lsn, location.lsn),
        ("snapshot_id", metadata.snapshot_id, location.snapshot_id),
    )
    return [
        f"metadata.json says {field}={said!r} but its key {location.metadata_key!r} says "
        f"{keyed!r}: Restate writes each snapshot's metadata.json into that snapshot's own "
        "folder, so this one was copied or written by something else"
        for field, said, keyed in pairs
        if said != keyed
    ]


def _file_name_problems(metadata: RestateMetadata) -> list[str]:
    problems = []
    seen: set[str] = set()
    for index, entry in enumerate(metadata.files):
        name = entry.file_name
        problem = path_problem(name)
        if problem is None and "/" in name:
            problem = "a RocksDB live file name has no folders"
        if problem is None and name in (METADATA_NAME, LATEST_NAME):
            problem = f"{name} is Restate's own file, not an SST"
        if problem is None and not _FILE_NAME_RE.fullmatch(name):
            problem = "only letters, digits, '.', '_' and '-' are allowed"
        if problem is not None:
            problems.append(
                f"files[{index}].name {entry.name[:128]!r} is not a file of the snapshot's "
                f"folder: {problem}"
            )
        elif name in seen:
            problems.append(f"files[{index}].name {entry.name!r} is listed twice")
        seen.add(name)
    return problems


def parse_latest(raw: bytes, *, partition: int | None = None) -> RestateLatest:
    """Parse a partition's Restate ``latest.json``; with ``partition`` (from its key),
    check that it is that partition's. Raise ManifestRejectedError otherwise (and never
    another exception, whatever ``raw`` holds)."""
    document = _load(raw, LATEST_NAME)
    try:
        latest = RestateLatest.model_validate(document)
    except ValidationError as exc:
        raise ManifestRejectedError(
            "latest.json is not a Restate 1.7 snapshot pointer (V1 or V2): " + _describe(exc)
        ) from None
    if partition is not None and latest.partition_id != partition:
        raise ManifestRejectedError(
            f"latest.json says partition_id={latest.partition_id} but it is partition "
            f"{partition}'s pointer: Restate would refuse to restore from it; rewrite it "
            "from that partition's snapshots"
        )
    return latest


# --- checks --------------------------------------------------------------------------


def expected_files(location: RestateLocation, metadata: RestateMetadata) -> dict[str, int]:
    """Every file ``metadata`` names, as key -> size (``metadata.json`` itself excluded)."""
    return {location.folder + entry.file_name: entry.size for entry in metadata.files}


def file_problems(expected: Mapping[str, int], listed_sizes: Mapping[str, int]) -> list[str]:
    """Why the files are not all there with their sizes (``listed_sizes``: one listing of
    the snapshot's folder, key -> size); empty when they are."""
    problems = []
    for key, size in expected.items():
        actual = listed_sizes.get(key)
        if actual is None:
            problems.append(
                f"{key!r} is missing: Restate uploads every SST before metadata.json, so it "
                "was deleted since (or the upload was not Restate's)"
            )
        elif actual != size:
            problems.append(
                f"{key!r} is {actual:,} bytes in the store but metadata.json says {size:,}: "
                "it was truncated or replaced, and Restate cannot restore from it"
            )
    return problems


def sst_footer_problem(tail: bytes) -> str | None:
    """Why an SST whose last bytes are ``tail`` (at most ``SST_TAIL_BYTES`` are needed) is
    not a RocksDB block-based table Restate can open, or None if it ends as one."""
    if len(tail) < len(SST_MAGIC_BYTES):
        return f"it is {len(tail)} bytes long, shorter than a RocksDB footer: the file is truncated"
    found = tail[-len(SST_MAGIC_BYTES) :]
    if found != SST_MAGIC_BYTES:
        return (
            f"it does not end with RocksDB's block-based table magic 0x{SST_MAGIC:016x} "
            f"(its last 8 bytes read 0x{int.from_bytes(found, 'little'):016x}): the file is "
            "damaged or not an SST"
        )
    return None


def fingerprint_problem(
    lineage_fingerprint: int | None,
    metadata: RestateMetadata,
    *,
    lineage_cluster_name: str | None = None,
) -> str | None:
    """Why ``metadata`` is from another cluster than its lineage's earlier snapshots, by
    Restate's own rule (names differ; or fingerprints differ, when both have one: "a
    repository path reused by another cluster"), or None."""
    if lineage_cluster_name is not None and metadata.cluster_name != lineage_cluster_name:
        return (
            f"the snapshot is from cluster {metadata.cluster_name!r} but this partition's "
            f"snapshots are from cluster {lineage_cluster_name!r}: two clusters write into the "
            "same snapshot prefix; give each its own destination"
        )
    if (
        lineage_fingerprint is not None
        and metadata.cluster_fingerprint is not None
        and metadata.cluster_fingerprint != lineage_fingerprint
    ):
        return (
            f"the snapshot's cluster fingerprint is {metadata.cluster_fingerprint} but this "
            f"partition's snapshots have {lineage_fingerprint}: another cluster (named "
            f"{metadata.cluster_name!r}) reuses this snapshot prefix, and Restate would refuse "
            "to restore from it; give each cluster its own destination"
        )
    return None


@dataclass(frozen=True, slots=True)
class RestateSummary:
    """What the ledger records of a registered Restate snapshot."""

    partition: int
    lsn: int
    snapshot_id: str
    file_count: int
    total_bytes: int
    cluster_name: str
    cluster_fingerprint: int | None
    node_name: str
    created_at: str
    log_id: int | None
    format: Literal["restate"] = FORMAT


def summary(location: RestateLocation, metadata: RestateMetadata) -> RestateSummary:
    return RestateSummary(
        partition=location.partition,
        lsn=location.lsn,
        snapshot_id=location.snapshot_id,
        file_count=len(metadata.files),
        total_bytes=metadata.total_bytes,
        cluster_name=metadata.cluster_name,
        cluster_fingerprint=metadata.cluster_fingerprint,
        node_name=metadata.node_name,
        created_at=metadata.created_at,
        log_id=metadata.log_id,
    )


# --- the pointer ---------------------------------------------------------------------


class RestatePointerError(ValueError):
    """A rewrite of latest.json that would break Restate's restore; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def replay_floor(latest: RestateLatest) -> int:
    """The oldest ``min_applied_lsn`` Restate retains: it may trim its log up to here, so
    it can restore only from a snapshot at or above it."""
    return min(entry.min_applied_lsn for entry in latest.retained())


def latest_with(latest: RestateLatest, snapshot_id: str) -> bytes:
    """``latest`` repointed at its retained snapshot ``snapshot_id`` (to heal, or to restore
    from a chosen one): the bytes to write back by compare-and-swap. Fields snapledger does
    not know are kept. Raises RestatePointerError if Restate does not retain that one."""
    target = next((e for e in latest.retained() if e.snapshot_id == snapshot_id), None)
    if target is None:
        raise RestatePointerError(
            f"Restate's latest.json for partition {latest.partition_id} does not retain "
            f"snapshot {snapshot_id!r} (it retains {', '.join(sorted(latest.retained_ids))}): "
            "Restate may have trimmed the log it would replay after it"
        )
    document = _document(latest)
    document.update(
        snapshot_id=target.snapshot_id,
        min_applied_lsn=target.min_applied_lsn,
        created_at=target.created_at,
        path=target.path,
    )
    return _render(document)


def latest_without(latest: RestateLatest, snapshot_ids: Iterable[str]) -> bytes:
    """``latest`` with ``snapshot_ids`` (deleted by GC) dropped from ``retained_snapshots``:
    the bytes to write back by compare-and-swap. Fields snapledger does not know are kept.
    Raises RestatePointerError if one of them is the snapshot latest.json names."""
    dropped = set(snapshot_ids)
    if latest.snapshot_id in dropped:
        raise RestatePointerError(
            f"snapshot {latest.snapshot_id} is the one Restate's latest.json for partition "
            f"{latest.partition_id} names: it restores from it, so it is never deleted"
        )
    document = _document(latest)
    if "retained_snapshots" in document:
        document["retained_snapshots"] = [
            entry
            for entry in document["retained_snapshots"]
            if entry.get("snapshot_id") not in dropped
        ]
    return _render(document)


def _document(latest: RestateLatest) -> dict[str, Any]:
    """``latest`` as JSON again: the fields it was given (unknown ones included), and no
    defaults it was not given."""
    return latest.model_dump(mode="json", exclude_unset=True)


def _render(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode()
