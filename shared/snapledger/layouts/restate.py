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

This module holds ``metadata.json`` and the checks of a snapshot's files, and is the
layout's one import: it re-exports the keys (``restate_keys``), ``latest.json``
(``restate_latest``) and what both documents share (``restate_documents``).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.core.problems import join_problems
from snapledger.layout import path_problem
from snapledger.limits import (
    MAX_COUNT,
    MAX_INT64,
    MAX_MANIFEST_FILES,
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
    "size_problem",
    "snapshot_path",
    "snapshot_prefix",
    "sst_footer_problem",
    "summary",
]

from snapledger.layouts.restate_documents import (
    Count,
    Fingerprint,
    Hex,
    LogId,
    Lsn,
    Partition,
    RestateDocument,
    SnapshotId,
    Text,
    Timestamp,
    Uint64,
    describe,
    load_json,
    parse_timestamp,
)
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
from snapledger.layouts.restate_latest import (
    RestateLatest,
    RestatePointerError,
    RestateRetained,
    latest_with,
    latest_without,
    parse_latest,
    replay_floor,
)

#: RocksDB live file names, after their leading '/': flat, and in characters object_store
#: keeps as they are (it percent-encodes others in the key, so they would not be found).
_FILE_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")


# --- the metadata ----------------------------------------------------------------


class RestateKeyRange(RestateDocument):
    start: Uint64
    end: Uint64


class RestateSstFile(RestateDocument):
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


class RestateMetadata(RestateDocument):
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


def parse_metadata(location: RestateLocation, raw: bytes) -> RestateMetadata:
    """Parse a snapshot's ``metadata.json`` (``raw``, read from ``location.metadata_key``)
    and check it against its key and its file names; raise ManifestRejectedError with the
    reason otherwise (and never another exception, whatever ``raw`` holds)."""
    document = load_json(raw, METADATA_NAME)
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
            "metadata.json is not a Restate 1.7 snapshot metadata (format V1): " + describe(exc)
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


# --- checks --------------------------------------------------------------------------


def expected_files(location: RestateLocation, metadata: RestateMetadata) -> dict[str, int]:
    """Every file ``metadata`` names, as key -> size (``metadata.json`` itself excluded)."""
    return {location.folder + entry.file_name: entry.size for entry in metadata.files}


def file_problems(
    expected: Mapping[str, int],
    listed_sizes: Mapping[str, int],
    footers: Mapping[str, str] | None = None,
) -> list[str]:
    """One line per file at fault, naming it and each check it failed (empty: none is):
    ``listed_sizes`` is one listing of the snapshot's folder (key -> size), ``footers``
    the footer problem of each SST whose footer was read and is not RocksDB's."""
    problems = []
    for key, size in expected.items():
        failed = [size_problem(size, listed_sizes.get(key)), (footers or {}).get(key)]
        found = [problem for problem in failed if problem is not None]
        if found:
            problems.append(f"{key!r}: {'; '.join(found)}; Restate cannot restore from it")
    return problems


def size_problem(size: int, listed: int | None) -> str | None:
    """Why a file ``metadata.json`` says is ``size`` bytes, listed at ``listed`` bytes (None:
    not listed), is not as Restate wrote it; None when it is."""
    if listed is None:
        return (
            "it is missing: Restate uploads every SST before metadata.json, so it was "
            "deleted since (or the upload was not Restate's)"
        )
    if listed != size:
        return (
            f"it is {listed:,} bytes in the store but metadata.json says {size:,}: it was "
            "truncated or replaced"
        )
    return None


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
