"""Restate 1.7's snapshot keys: the names and key patterns, without the documents.

```
{prefix}/{partition}/lsn_{lsn:020d}-{snapshot_id}/{NNNNNN}.sst ... metadata.json
{prefix}/{partition}/latest.json
```

Split from ``restate.py`` (which re-exports all of it) so that placing a key, which every
function may do at its cold start (``strategies/catalog.py``), builds none of the documents'
models. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from snapledger.layout import path_problem
from snapledger.limits import MAX_LSN

#: The layout's name, and the ``format`` its snapshots are recorded with (opaque to the
#: Spark jobs: RocksDB SSTs, downloadable by the client).
NAME: Literal["restate"] = "restate"
FORMAT: Literal["restate"] = "restate"
#: Restate writes ``latest.json``; snapledger only heals or repoints it, by compare-and-swap.
POINTER_OWNER: Literal["producer"] = "producer"

#: The most snapshots Restate keeps per partition (``num-retained``; its config refuses
#: more, its default is 1), and what snapledger recommends: Restate then never evicts what
#: snapledger's policy keeps, and GC's prune keeps Restate's list at what the policy keeps.
RECOMMENDED_NUM_RETAINED = 255

METADATA_NAME = "metadata.json"
LATEST_NAME = "latest.json"
LSN_WIDTH = 20
#: Restate's snapshot ids: ``snap_`` and a base62 number (``snap_16JRxlSCK1LJ3Z77LmT8Pap``).
SNAPSHOT_ID_PATTERN = r"snap_[0-9A-Za-z]{1,64}"
#: RocksDB's block-based table magic number, the last 8 bytes of every SST Restate writes
#: (little-endian).
SST_MAGIC = 0x88E241B785F4CFF7
SST_MAGIC_BYTES = SST_MAGIC.to_bytes(8, "little")
#: How much of an SST's tail registration reads (one ranged GET, ``bytes=-64``): a format
#: 6 footer is 53 bytes; only the magic, its last 8, is checked.
SST_TAIL_BYTES = 64
SST_SUFFIX = ".sst"

_PARTITION = r"0|[1-9][0-9]{0,8}"
_OBJECT_RE = re.compile(
    rf"(?P<partition>{_PARTITION})/lsn_(?P<lsn>[0-9]{{{LSN_WIDTH}}})-"
    rf"(?P<snapshot_id>{SNAPSHOT_ID_PATTERN})/(?P<name>[^/]+)"
)
_LATEST_RE = re.compile(rf"(?P<partition>{_PARTITION})/{re.escape(LATEST_NAME)}")


# --- keys ----------------------------------------------------------------------------


def normalize_prefix(prefix: str) -> str:
    """The configured prefix as Restate uses it (``s3://bucket/{prefix}``'s path without
    its '/' at either end; '' for the bucket's root). Raises ValueError when it is not a
    plain relative path (a deploy setting, not an input)."""
    stripped = prefix.strip("/")
    problem = path_problem(stripped) if stripped else None
    if problem is not None:
        raise ValueError(
            f"Restate snapshot prefix {prefix!r} is not usable: {problem}; give the path of "
            'Restate\'s destination = "s3://bucket/<prefix>", e.g. "restate/cluster-a"'
        )
    return stripped


def _base(prefix: str) -> str:
    normalized = normalize_prefix(prefix)
    return normalized + "/" if normalized else ""


def partition_prefix(prefix: str, partition: int) -> str:
    """``{prefix}/{partition}/``: one partition's folder (its snapshots and latest.json)."""
    return f"{_base(prefix)}{partition}/"


def snapshot_path(lsn: int, snapshot_id: str) -> str:
    """``lsn_{lsn:020d}-{snapshot_id}``: a snapshot's folder name, as latest.json's ``path``."""
    return f"lsn_{lsn:0{LSN_WIDTH}d}-{snapshot_id}"


def snapshot_prefix(prefix: str, partition: int, lsn: int, snapshot_id: str) -> str:
    """``{prefix}/{partition}/lsn_{lsn:020d}-{snapshot_id}/``, with its trailing slash."""
    return partition_prefix(prefix, partition) + snapshot_path(lsn, snapshot_id) + "/"


def metadata_key(prefix: str, partition: int, lsn: int, snapshot_id: str) -> str:
    return snapshot_prefix(prefix, partition, lsn, snapshot_id) + METADATA_NAME


def latest_pointer_key(prefix: str, partition: int) -> str:
    """``{prefix}/{partition}/latest.json``: Restate's pointer for the partition."""
    return partition_prefix(prefix, partition) + LATEST_NAME


@dataclass(frozen=True, slots=True)
class RestateLocation:
    """One Restate snapshot, as parsed from its ``metadata.json`` key. ``prefix`` is the
    normalized configured prefix; ``lsn`` is Restate's ``min_applied_lsn``."""

    prefix: str
    partition: int
    lsn: int
    snapshot_id: str

    @property
    def path(self) -> str:
        """The folder's name, ``lsn_{lsn:020d}-{snapshot_id}`` (latest.json's ``path``)."""
        return snapshot_path(self.lsn, self.snapshot_id)

    @property
    def folder(self) -> str:
        """The snapshot's folder, with a trailing slash."""
        return snapshot_prefix(self.prefix, self.partition, self.lsn, self.snapshot_id)

    @property
    def metadata_key(self) -> str:
        return self.folder + METADATA_NAME

    @property
    def latest_key(self) -> str:
        """The partition's ``latest.json`` (outside every snapshot folder)."""
        return latest_pointer_key(self.prefix, self.partition)


def parse_snapshot_object_key(key: str, prefix: str) -> tuple[RestateLocation, str] | None:
    """``(location, name)`` of any object directly in a Restate snapshot folder under
    ``prefix`` (an SST, ``metadata.json``, a stray file), or None if ``key`` is not one:
    the partition without leading zeros, the LSN of exactly 20 digits and at most
    ``MAX_LSN``, the id ``snap_`` and 1-64 letters or digits."""
    base = _base(prefix)
    if not key.startswith(base):
        return None
    match = _OBJECT_RE.fullmatch(key, len(base))
    if match is None:
        return None
    lsn = int(match["lsn"])
    if lsn > MAX_LSN:
        return None
    location = RestateLocation(
        prefix=base.rstrip("/"),
        partition=int(match["partition"]),
        lsn=lsn,
        snapshot_id=match["snapshot_id"],
    )
    return location, match["name"]


def parse_restate_key(key: str, prefix: str) -> RestateLocation | None:
    """The snapshot whose ``metadata.json`` is at ``key`` under the configured ``prefix``,
    or None if ``key`` is not exactly such a key (see ``parse_snapshot_object_key``).
    Raises ValueError only for an unusable configured ``prefix``."""
    parsed = parse_snapshot_object_key(key, prefix)
    if parsed is None or parsed[1] != METADATA_NAME:
        return None
    return parsed[0]


def parse_latest_key(key: str, prefix: str) -> int | None:
    """The partition whose Restate ``latest.json`` is at ``key``, or None."""
    base = _base(prefix)
    if not key.startswith(base):
        return None
    match = _LATEST_RE.fullmatch(key, len(base))
    return None if match is None else int(match["partition"])
