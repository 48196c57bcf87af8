"""Fluss 0.7's KV snapshots as they lie under ``remote.data.dir``: keys and ``_METADATA``, pure.

A primary-key table's buckets snapshot their RocksDB state under
``{remote}/kv/{db}/{table}-{table_id}/{bucket}/``: each snapshot a folder ``snap-{id}/``
(its private files, RocksDB's ``CURRENT``, ``MANIFEST-*`` and ``OPTIONS-*``, each under a
UUID name, and ``_METADATA``, written last by the coordinator) and the bucket's ``shared/``
folder of SSTs several snapshots use. A partitioned table's buckets are one level deeper
(``{partition}-p{partition_id}/{bucket}/``). ``snapshot_id`` counts per bucket from 0.

In the layout map, a table's KV folder (``.../kv/{db}/{table}-{table_id}``, relative to the
bucket) is the prefix of one stream; each bucket is a partition of it, each snapshot's
``snap-{id}`` its snapshot id and ``id`` its LSN (Fluss's ``log_offset`` goes into the
snapshot's ``offsets``). A table dropped and created again under its name has another
table id, so another prefix: its snapshots never mix with the old table's.

``_METADATA`` is JSON: ``version``, ``table_id``, ``bucket_id``, ``snapshot_id``,
``snapshot_location`` (the folder, absolute: ``s3://bucket/...`` on S3), ``log_offset``,
``kv_snapshot_handle.{shared_file_handles,private_file_handles}[]`` (each
``{"kv_file_handle": {"path", "size"}, "local_path"}``, every path absolute) and
``snapshot_incremental_size``. It names no checksum.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from snapledger.errors import InvalidKeyError
from snapledger.layout import path_problem
from snapledger.layouts import PointerOwner, restate_keys
from snapledger.limits import MAX_LSN, MAX_MANIFEST_FILES, MAX_PARTITION

NAME = "fluss-kv"
#: The coordinator writes it last, into the snapshot's folder.
METADATA_NAME = "_METADATA"
#: The bucket's folder of SSTs shared by its snapshots.
SHARED_FOLDER = "shared"
#: Fluss owns its snapshots' pointer (the ZooKeeper node of each completed snapshot).
POINTER_OWNER: PointerOwner = "producer"
FORMAT = "opaque"
SOURCE_KIND = "fluss"
#: A snapshot id: ``snap-{id}``, the bucket's counter.
SNAPSHOT_ID_PATTERN = r"snap-[0-9]{1,18}"
_SNAP_FOLDER = re.compile(r"snap-(?P<id>0|[1-9][0-9]{0,17})")
_TABLE_FOLDER = re.compile(r"(?P<table>[A-Za-z0-9_]+)-(?P<id>0|[1-9][0-9]{0,17})")
_BUCKET = re.compile(r"0|[1-9][0-9]{0,8}")
_PARTITION_FOLDER = re.compile(r".+-p[0-9]+")


@dataclass(frozen=True, slots=True)
class FlussTable:
    """A table's KV folder (a layout-map prefix): which table it is."""

    prefix: str
    database: str
    table: str
    table_id: int


def table_of_prefix(raw: str) -> FlussTable:
    """A layout-map prefix, checked: a Fluss table's KV folder, ``.../kv/{db}/{table}-{id}``."""
    prefix = restate_keys.normalize_prefix(raw)
    parts = prefix.split("/")
    match = _TABLE_FOLDER.fullmatch(parts[-1]) if len(parts) >= 3 else None
    if match is None or parts[-3] != "kv" or not parts[-2]:
        raise InvalidKeyError(
            f"{prefix!r} is not a Fluss table's KV folder: give {{remote.data.dir}}/kv/"
            "{database}/{table}-{table_id} relative to the bucket (e.g. fluss/kv/shop/"
            "orders-7), where Fluss 0.7 writes that table's KV snapshots"
        )
    return FlussTable(prefix, parts[-2], match["table"], int(match["id"]))


@dataclass(frozen=True, slots=True)
class FlussLocation:
    """One bucket snapshot's ``_METADATA`` under a table's prefix."""

    bucket: int
    number: int  # the snapshot id: Fluss's per-bucket counter

    @property
    def snapshot_id(self) -> str:
        return f"snap-{self.number}"

    def root(self, prefix: str) -> str:
        """The bucket's folder (the lineage's), with a trailing slash."""
        return f"{prefix}/{self.bucket}/"

    def folder(self, prefix: str) -> str:
        return f"{self.root(prefix)}{self.snapshot_id}/"

    def metadata_key(self, prefix: str) -> str:
        return self.folder(prefix) + METADATA_NAME


#: Why an object under a table's prefix is no snapshot's ``_METADATA`` (not recorded).
NOT_METADATA = "not a Fluss snapshot's _METADATA (a snapshot's file, or a shared SST)"


def parse_key(key: str, prefix: str) -> FlussLocation | str | None:
    """The snapshot whose ``_METADATA`` is at ``key``; a reason (recorded REJECTED) when it
    is named so but cannot be registered; None when it is another object of the table."""
    rest = key.removeprefix(prefix + "/")
    parts = rest.split("/")
    if parts[-1] != METADATA_NAME:
        return None
    if len(parts) == 4 and _PARTITION_FOLDER.fullmatch(parts[0]):
        return (
            f"{key!r} is a partitioned table's snapshot: snapledger registers the KV "
            "snapshots of Fluss tables without partitions (docs/fluss.md)"
        )
    if len(parts) != 3 or _BUCKET.fullmatch(parts[0]) is None:
        return f"{key!r} is not at {{bucket}}/snap-{{id}}/{METADATA_NAME} under {prefix!r}"
    snap = _SNAP_FOLDER.fullmatch(parts[1])
    bucket = int(parts[0])
    if snap is None or int(snap["id"]) > MAX_LSN or bucket > MAX_PARTITION:
        return (
            f"{key!r} is not at {{bucket}}/snap-{{id}}/{METADATA_NAME} under {prefix!r} "
            f"(bucket 0 to {MAX_PARTITION:,}, id 0 to {MAX_LSN:,})"
        )
    return FlussLocation(bucket, int(snap["id"]))


def folder_number(name: str) -> int | None:
    """The snapshot id a bucket's sub-folder ``snap-{id}`` holds, or None."""
    match = _SNAP_FOLDER.fullmatch(name)
    return None if match is None else int(match["id"])


@dataclass(frozen=True, slots=True)
class FlussMetadata:
    """What registration keeps of a ``_METADATA``: the keys of its files with their sizes,
    its own (``snap-{id}/``) and the shared ones (``shared/``, relative to the bucket)."""

    log_offset: int
    own: dict[str, int]  # key -> size
    shared: dict[str, int]  # path relative to the bucket's folder -> size

    @property
    def total_bytes(self) -> int:
        return sum(self.own.values()) + sum(self.shared.values())


class MetadataError(ValueError):
    """A ``_METADATA`` that cannot be registered: every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_metadata(raw: bytes, table: FlussTable, location: FlussLocation) -> FlussMetadata:
    """The ``_METADATA`` at ``location``, checked against its key: its ids, its log offset
    and every file inside the bucket's folder (its own or ``shared/``); MetadataError with
    every problem found."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError([f"_METADATA is not JSON ({exc})"]) from None
    if not isinstance(document, dict):
        raise MetadataError(["_METADATA is not a JSON object"])
    problems = [
        f"{field} is {document.get(field)!r}, but its key says {expected}"
        for field, expected in (
            ("table_id", table.table_id),
            ("bucket_id", location.bucket),
            ("snapshot_id", location.number),
        )
        if not _is_int(document.get(field)) or document.get(field) != expected
    ]
    log_offset = document.get("log_offset")
    if (
        not isinstance(log_offset, int)
        or isinstance(log_offset, bool)
        or not 0 <= log_offset <= MAX_LSN
    ):
        problems.append(f"log_offset is {log_offset!r}: an offset 0 to {MAX_LSN:,}")
    base = _base(document.get("snapshot_location"), table, location, problems)
    own: dict[str, int] = {}
    shared: dict[str, int] = {}
    handles = document.get("kv_snapshot_handle")
    groups = handles if isinstance(handles, dict) else {}
    for group in ("private_file_handles", "shared_file_handles"):
        for index, handle in enumerate(_list(groups.get(group), group, problems)):
            where = f"kv_snapshot_handle.{group}[{index}]"
            found = _file_of(handle, where, base)
            if isinstance(found, str):
                problems.append(found)
                continue
            relative, size = found
            folder, _, name = relative.partition("/")
            if folder == location.snapshot_id and name != METADATA_NAME:
                own[location.root(table.prefix) + relative] = size
            elif folder == SHARED_FOLDER:
                shared[relative] = size
            else:
                problems.append(
                    f"{where} {relative!r} is neither in its snapshot's folder nor in the "
                    "bucket's shared/"
                )
    if len(own) + len(shared) > MAX_MANIFEST_FILES:
        problems.append(f"it names more than {MAX_MANIFEST_FILES:,} files")
    if problems:
        raise MetadataError(problems)
    return FlussMetadata(int(log_offset or 0), own, shared)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list(value: object, group: str, problems: list[str]) -> list[Any]:
    if isinstance(value, list):
        return value
    problems.append(f"kv_snapshot_handle.{group} is {value!r}: a list of file handles")
    return []


def _base(value: object, table: FlussTable, location: FlussLocation, problems: list[str]) -> str:
    """Where the bucket's folder is in Fluss's absolute paths: ``snapshot_location`` less
    the key's folder (``s3://bucket/`` on S3); every file must be under it."""
    folder = location.folder(table.prefix).rstrip("/")
    if isinstance(value, str) and value.rstrip("/").endswith("/" + folder):
        return value.rstrip("/")[: -len(folder)] + location.root(table.prefix)
    problems.append(
        f"snapshot_location is {value!r}, which does not end with its key's folder {folder!r}"
    )
    return "\0"  # no path starts with it: each file is then named as outside too


def _file_of(handle: object, where: str, base: str) -> tuple[str, int] | str:
    """A file handle's path relative to the bucket's folder and its size, or the problem."""
    file = handle.get("kv_file_handle") if isinstance(handle, dict) else None
    path = file.get("path") if isinstance(file, dict) else None
    size = file.get("size") if isinstance(file, dict) else None
    if not isinstance(path, str) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return f"{where} has no kv_file_handle with a path and a size"
    relative = path.removeprefix(base) if path.startswith(base) and base != "\0" else None
    name = (relative or "").partition("/")[2]
    if relative is None or "/" in name or path_problem(relative) is not None:
        return f"{where} {path!r} is outside its bucket's folder"
    return relative, size
