"""The storage layout: where snapshots, changelog segments and restores live.

```
snapshots/{stream}/{partition}/{lsn:020d}-{snapshot_id}/...files... _manifest.json
changelog/{stream}/{partition}/{first_lsn:020d}-{last_lsn:020d}.parquet
restores/{job_id}/{partition}/part-*.parquet ... _restore.json
```

Zero-padded LSNs make lexicographic order numeric order. Keys here are relative to the
object store's root (an ``s3://bucket/prefix`` or ``file:///dir``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from snapledger import limits
from snapledger.errors import InvalidKeyError

SNAPSHOTS = "snapshots"
CHANGELOG = "changelog"
RESTORES = "restores"
MANIFEST_NAME = "_manifest.json"
LATEST_POINTER_NAME = "latest.json"
GENERATION_POINTER_NAME = "generation.json"
#: Keys pad LSNs to 20 digits; an LSN is an int64 (``limits.MAX_LSN``, 19 digits).
LSN_WIDTH = 20
MAX_LSN = limits.MAX_LSN

STREAM_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
ULID_PATTERN = r"[0-9A-HJKMNP-TV-Z]{26}"
_STREAM_RE = re.compile(rf"^{STREAM_PATTERN}$")
_SNAPSHOT_DIR_RE = re.compile(
    rf"^{SNAPSHOTS}/(?P<stream>{STREAM_PATTERN})/(?P<partition>0|[1-9][0-9]{{0,8}})/"
    rf"(?P<lsn>[0-9]{{{LSN_WIDTH}}})-(?P<snapshot_id>{ULID_PATTERN})/$"
)
_SEGMENT_NAME_RE = re.compile(
    rf"^(?P<first>[0-9]{{{LSN_WIDTH}}})-(?P<last>[0-9]{{{LSN_WIDTH}}})\.parquet$"
)
_CHANGELOG_LINEAGE_RE = re.compile(
    rf"^{CHANGELOG}/(?P<stream>{STREAM_PATTERN})/(?P<partition>0|[1-9][0-9]{{0,8}})/(?P<name>.+)$"
)
_SEGMENT_RE = re.compile(
    rf"^{CHANGELOG}/(?P<stream>{STREAM_PATTERN})/(?P<partition>0|[1-9][0-9]{{0,8}})/"
    rf"(?P<first>[0-9]{{{LSN_WIDTH}}})-(?P<last>[0-9]{{{LSN_WIDTH}}})\.parquet$"
)


@dataclass(frozen=True, slots=True)
class SnapshotLocation:
    """Where one snapshot lives, as parsed from (or rendered into) its key."""

    stream: str
    partition: int
    lsn: int
    snapshot_id: str

    @property
    def prefix(self) -> str:
        """The snapshot's folder, with a trailing slash."""
        return snapshot_prefix(self.stream, self.partition, self.lsn, self.snapshot_id)

    @property
    def manifest_key(self) -> str:
        return self.prefix + MANIFEST_NAME


@dataclass(frozen=True, slots=True)
class SegmentLocation:
    """One changelog segment, as parsed from its key."""

    stream: str
    partition: int
    first_lsn: int
    last_lsn: int

    @property
    def key(self) -> str:
        return segment_key(self.stream, self.partition, self.first_lsn, self.last_lsn)

    @property
    def name(self) -> str:
        """The file name, the key's last part."""
        return segment_name(self.first_lsn, self.last_lsn)


def check_stream_name(stream: str) -> str:
    """Return ``stream`` if it is a valid stream name, else raise with the rule."""
    if not _STREAM_RE.match(stream):
        raise InvalidKeyError(
            f"stream name {stream!r} is not valid: use 1-128 characters of letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )
    return stream


def snapshot_prefix(stream: str, partition: int, lsn: int, snapshot_id: str) -> str:
    check_stream_name(stream)
    return f"{SNAPSHOTS}/{stream}/{partition}/{lsn:0{LSN_WIDTH}d}-{snapshot_id}/"


def latest_pointer_key(stream: str, partition: int) -> str:
    """``snapshots/{stream}/{partition}/latest.json``: the lineage's latest snapshot, as an
    object a reader finds with one GET (outside every snapshot prefix, so the orphan
    sweep and GC never see it as a snapshot's file)."""
    return lineage_snapshots_prefix(stream, partition) + LATEST_POINTER_NAME


def generation_pointer_key(stream: str) -> str:
    """``snapshots/{stream}/generation.json``: the stream's newest completed stream snapshot
    (outside every lineage's folder, so no lineage's listing, orphan sweep or GC sees it)."""
    return f"{SNAPSHOTS}/{check_stream_name(stream)}/{GENERATION_POINTER_NAME}"


def lineage_snapshots_prefix(stream: str, partition: int) -> str:
    return f"{SNAPSHOTS}/{check_stream_name(stream)}/{partition}/"


def lineage_changelog_prefix(stream: str, partition: int) -> str:
    return f"{CHANGELOG}/{check_stream_name(stream)}/{partition}/"


def segment_key(stream: str, partition: int, first_lsn: int, last_lsn: int) -> str:
    return lineage_changelog_prefix(stream, partition) + segment_name(first_lsn, last_lsn)


def segment_name(first_lsn: int, last_lsn: int) -> str:
    """A segment's file name: ``{first_lsn:020d}-{last_lsn:020d}.parquet``."""
    return f"{first_lsn:0{LSN_WIDTH}d}-{last_lsn:0{LSN_WIDTH}d}.parquet"


def parse_segment_name(name: str) -> tuple[int, int] | None:
    """``(first_lsn, last_lsn)`` of a segment file name, or None if it is not one."""
    match = _SEGMENT_NAME_RE.match(name)
    if match is None or int(match["last"]) > MAX_LSN:
        return None
    return int(match["first"]), int(match["last"])


def restore_prefix(job_id: str, partition: int) -> str:
    return f"{RESTORES}/{job_id}/{partition}/"


def parse_manifest_key(key: str) -> SnapshotLocation:
    """Parse ``snapshots/{stream}/{partition}/{lsn:020d}-{id}/_manifest.json``.

    Raises InvalidKeyError naming the expected shape when the key does not match.
    """
    if not key.endswith("/" + MANIFEST_NAME):
        raise InvalidKeyError(f"{key!r} is not a manifest key: it must end in /{MANIFEST_NAME}")
    return parse_snapshot_prefix(key[: -len(MANIFEST_NAME)])


def parse_snapshot_prefix(prefix: str) -> SnapshotLocation:
    match = _SNAPSHOT_DIR_RE.match(prefix)
    if match is None:
        raise InvalidKeyError(
            f"{prefix!r} does not follow the snapshot layout "
            f"{SNAPSHOTS}/{{stream}}/{{partition}}/{{lsn:020d}}-{{ulid}}/"
        )
    lsn = int(match["lsn"])
    if lsn > MAX_LSN:
        raise InvalidKeyError(
            f"{prefix!r} names LSN {lsn}, above the largest LSN {MAX_LSN} (a signed 64-bit "
            "integer): LSNs are int64 in the changelog and the jobs"
        )
    return SnapshotLocation(
        stream=match["stream"],
        partition=int(match["partition"]),
        lsn=lsn,
        snapshot_id=match["snapshot_id"],
    )


def parse_segment_key(key: str) -> SegmentLocation:
    """Parse ``changelog/{stream}/{partition}/{first:020d}-{last:020d}.parquet``."""
    match = _SEGMENT_RE.match(key)
    if match is None:
        raise InvalidKeyError(
            f"{key!r} does not follow the changelog layout "
            f"{CHANGELOG}/{{stream}}/{{partition}}/{{first_lsn:020d}}-{{last_lsn:020d}}.parquet"
        )
    first, last = int(match["first"]), int(match["last"])
    if last > MAX_LSN:
        raise InvalidKeyError(f"{key!r}: LSN {last} is above the largest LSN {MAX_LSN} (int64)")
    if first > last:
        raise InvalidKeyError(f"{key!r}: first LSN {first} is above last LSN {last}")
    return SegmentLocation(match["stream"], int(match["partition"]), first, last)


def parse_changelog_lineage(key: str) -> tuple[str, int, str] | None:
    """``(stream, partition, name)`` of any key under a lineage's changelog folder, segment
    or not (``name`` is the rest of the key), or None if the key names no lineage."""
    match = _CHANGELOG_LINEAGE_RE.match(key)
    return None if match is None else (match["stream"], int(match["partition"]), match["name"])


def path_problem(path: str) -> str | None:  # noqa: PLR0911 - one rule, one return
    """Why ``path`` could escape or confuse its snapshot prefix, or None if it is safe."""
    if path.startswith("/"):
        return "absolute paths are not allowed"
    if "\\" in path:
        return "backslashes are not allowed"
    if "%" in path:
        return "'%' is not allowed (no percent-encoding)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return "control characters are not allowed"
    if unicodedata.normalize("NFKC", path) != path:
        return "the path must be in Unicode NFKC form (look-alike characters are not allowed)"
    segments = path.split("/")
    if "" in segments:
        return "empty path segments ('//' or a trailing '/') are not allowed"
    if "." in segments or ".." in segments:
        return "'.' and '..' segments are not allowed"
    if path == MANIFEST_NAME:
        return "the manifest cannot list itself"
    return None
