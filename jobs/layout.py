"""The storage layout as the job sees it: ``snapledger.layout``, which the job's zip carries
(``infra.names.JOB_SHARED_MODULES``), and the few names only the job writes.

```
snapshots/{stream}/{partition}/{lsn:020d}-{snapshot_id}/part-00000.parquet ... _manifest.json
changelog/{stream}/{partition}/{first_lsn:020d}-{last_lsn:020d}.parquet
restores/{job_id}/{partition}/part-00000.parquet ... _restore.json
_staging/{job_id}/...   (the job's scratch space, deleted when the job ends)
```
"""

from __future__ import annotations

import re

from snapledger.errors import InvalidKeyError
from snapledger.job_kinds import RESTORE_DESCRIPTOR_NAME
from snapledger.layout import (
    LSN_WIDTH,
    MANIFEST_NAME,
    MAX_LSN,
    STREAM_PATTERN,
    SnapshotLocation,
    lineage_changelog_prefix,
    parse_segment_name,
    parse_snapshot_prefix,
    restore_prefix,
    segment_name,
    snapshot_prefix,
)

__all__ = [
    "LSN_WIDTH",
    "MANIFEST_NAME",
    "MAX_LSN",
    "RESTORE_DESCRIPTOR_NAME",
    "changelog_dir",
    "data_file_name",
    "is_valid_job_id",
    "is_valid_stream",
    "join",
    "parse_segment_name",
    "restore_prefix",
    "segment_name",
    "snapshot_location",
    "snapshot_prefix",
    "staging_prefix",
]

_STREAM_RE = re.compile(rf"^{STREAM_PATTERN}$")
_JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def is_valid_stream(stream: str) -> bool:
    return _STREAM_RE.match(stream) is not None


def is_valid_job_id(job_id: str) -> bool:
    return _JOB_ID_RE.match(job_id) is not None


def changelog_dir(stream: str, partition: int) -> str:
    return lineage_changelog_prefix(stream, partition)


def snapshot_location(prefix: str) -> SnapshotLocation | None:
    """Where the snapshot at ``prefix`` (with or without its trailing '/') is, or None."""
    try:
        return parse_snapshot_prefix(prefix if prefix.endswith("/") else prefix + "/")
    except InvalidKeyError:
        return None


def staging_prefix(job_id: str, attempt_id: str) -> str:
    return f"_staging/{job_id}-{attempt_id}/"


def data_file_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def join(root: str, key: str) -> str:
    """The URI of ``key`` under ``root`` (``s3://bucket/prefix`` or ``file:///dir``)."""
    return root.rstrip("/") + "/" + key.lstrip("/")
