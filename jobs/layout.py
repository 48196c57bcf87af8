"""The storage layout as the job sees it: a stdlib mirror of ``snapledger.layout``.

The job cannot import snapledger (it ships alone as a ``--py-files`` zip), so the few
key formats it needs are repeated here; tests/jobs/test_layout.py checks that they agree
with the shared module.

```
snapshots/{stream}/{partition}/{lsn:020d}-{snapshot_id}/part-00000.parquet ... _manifest.json
changelog/{stream}/{partition}/{first_lsn:020d}-{last_lsn:020d}.parquet
restores/{job_id}/{partition}/part-00000.parquet ... _restore.json
_staging/{job_id}/...   (the job's scratch space, deleted when the job ends)
```
"""

from __future__ import annotations

import re

LSN_WIDTH = 20
MAX_LSN = 10**LSN_WIDTH - 1
MANIFEST_NAME = "_manifest.json"
RESTORE_DESCRIPTOR_NAME = "_restore.json"

_STREAM_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SEGMENT_NAME_RE = re.compile(
    rf"^(?P<first>[0-9]{{{LSN_WIDTH}}})-(?P<last>[0-9]{{{LSN_WIDTH}}})\.parquet$"
)
_SNAPSHOT_PREFIX_RE = re.compile(
    rf"^snapshots/(?P<stream>[^/]+)/(?P<partition>0|[1-9][0-9]{{0,8}})/"
    rf"(?P<lsn>[0-9]{{{LSN_WIDTH}}})-(?P<snapshot_id>[0-9A-HJKMNP-TV-Z]{{26}})/$"
)


def is_valid_stream(stream: str) -> bool:
    return _STREAM_RE.match(stream) is not None


def is_valid_job_id(job_id: str) -> bool:
    return _JOB_ID_RE.match(job_id) is not None


def changelog_dir(stream: str, partition: int) -> str:
    return f"changelog/{stream}/{partition}/"


def segment_name(first_lsn: int, last_lsn: int) -> str:
    return f"{first_lsn:0{LSN_WIDTH}d}-{last_lsn:0{LSN_WIDTH}d}.parquet"


def parse_segment_name(name: str) -> tuple[int, int] | None:
    """``(first_lsn, last_lsn)`` from a segment file name, or None if it is not one."""
    match = _SEGMENT_NAME_RE.match(name)
    if match is None:
        return None
    return int(match["first"]), int(match["last"])


def snapshot_prefix(stream: str, partition: int, lsn: int, snapshot_id: str) -> str:
    return f"snapshots/{stream}/{partition}/{lsn:0{LSN_WIDTH}d}-{snapshot_id}/"


def parse_snapshot_prefix(prefix: str) -> tuple[str, int, int, str] | None:
    """``(stream, partition, lsn, snapshot_id)`` from a snapshot prefix, or None."""
    match = _SNAPSHOT_PREFIX_RE.match(prefix if prefix.endswith("/") else prefix + "/")
    if match is None:
        return None
    return match["stream"], int(match["partition"]), int(match["lsn"]), match["snapshot_id"]


def restore_prefix(job_id: str, partition: int) -> str:
    return f"restores/{job_id}/{partition}/"


def staging_prefix(job_id: str, attempt_id: str) -> str:
    return f"_staging/{job_id}-{attempt_id}/"


def data_file_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def join(root: str, key: str) -> str:
    """The URI of ``key`` under ``root`` (``s3://bucket/prefix`` or ``file:///dir``)."""
    return root.rstrip("/") + "/" + key.lstrip("/")
