"""A restore's ``_restore.json`` (docs/jobs.md, "Restores"), as the reader parses it.

The restore job writes it as a plain dict (``jobs/descriptors.py``); this model is its
reading side. Its ``files`` entries are a manifest's (``ManifestFile``). Fields a newer job
adds are ignored, so an older client still reads a newer restore.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from snapledger.layout import MAX_LSN, ULID_PATTERN
from snapledger.models.base import Stored
from snapledger.models.manifest import MAX_MANIFEST_FILES, ManifestFile, ManifestProducer

RESTORE_DESCRIPTOR_NAME = "_restore.json"


class RestoreBase(Stored):
    """The snapshot a restore started from."""

    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]
    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]
    offsets: dict[str, int] | None = None


class RestoreDescriptorV1(Stored):
    """``restores/{job_id}/{partition}/_restore.json``: the state of one partition as of
    ``lsn``, in the data files listed (kv-parquet, like a snapshot's)."""

    format_version: Literal[1]
    job_id: Annotated[str, Field(min_length=1, max_length=128)]
    stream: str
    partition: Annotated[int, Field(ge=0)]
    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]
    base: RestoreBase | None = None
    changelog_from_lsn: int | None = None
    changelog_to_lsn: int | None = None
    created_at: datetime | None = None
    producer: ManifestProducer | None = None
    files: Annotated[list[ManifestFile], Field(max_length=MAX_MANIFEST_FILES)]
    row_count: Annotated[int | None, Field(default=None, ge=0)] = None
