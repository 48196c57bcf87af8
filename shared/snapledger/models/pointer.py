"""Pointer objects in the bucket, readable with one GET without the registry.

- ``snapshots/{stream}/{partition}/latest.json`` (``LatestPointer``): a lineage's latest
  snapshot, written after the latest pointer advances (``services/latest_pointer.py``);
- ``snapshots/{stream}/generation.json`` (``GenerationPointer``): the stream's newest
  completed stream snapshot, written after the registration that completed it.

So a processor can find and check its state with one GET, even while the registry's
functions or table are unreachable. The JSON Schemas in ``docs/latest-pointer-v1.schema.json``
and ``docs/generation-pointer-v1.schema.json`` are generated from these models
(``make schema``); a test fails when they differ.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from snapledger.layout import (
    MANIFEST_NAME,
    MAX_LSN,
    STREAM_PATTERN,
    ULID_PATTERN,
    SnapshotLocation,
    snapshot_prefix,
)
from snapledger.models.base import Stored
from snapledger.models.generations import StreamGeneration
from snapledger.models.ledger import SnapshotRecord, snapshot_sort_key
from snapledger.models.manifest import MAX_OFFSETS, ManifestFile, ManifestV1, SnapshotFormat


class LatestPointer(Stored):
    """Pointer format version 1 (fields a newer version adds are ignored when read)."""

    format_version: Literal[1] = Field(description="Always 1 for this format.")
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    partition: Annotated[int, Field(ge=0, le=999_999_999)]
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]
    lsn: Annotated[
        int, Field(ge=0, le=MAX_LSN, description="The snapshot's state includes lsn <= this.")
    ]
    epoch: Annotated[int, Field(ge=0, description="The writer's epoch in its manifest.")]
    prefix: str = Field(description="The snapshot's folder, relative to the bucket's root.")
    manifest_key: str = Field(description="Its _manifest.json, relative to the root.")
    format: SnapshotFormat
    files: Annotated[
        list[ManifestFile],
        Field(description="As the manifest lists them: path (relative to prefix), size, "
              "rows, checksum. Check them before trusting the state."),
    ]  # fmt: skip
    row_count: int | None = None
    registered_at: datetime = Field(description="Registry time the snapshot was recorded.")
    offsets: Annotated[
        dict[str, Annotated[int, Field(ge=0)]] | None,
        Field(default=None, max_length=MAX_OFFSETS, description="The manifest's offsets."),
    ] = None

    @classmethod
    def of(cls, record: SnapshotRecord, manifest: ManifestV1) -> LatestPointer:
        """The pointer of a registered snapshot: its ledger record and its manifest."""
        location = SnapshotLocation(record.stream, record.partition, record.lsn, record.snapshot_id)
        return cls(
            format_version=1,
            stream=record.stream,
            partition=record.partition,
            snapshot_id=record.snapshot_id,
            lsn=record.lsn,
            epoch=manifest.epoch,
            prefix=location.prefix,
            manifest_key=record.manifest_key,
            format=manifest.format,
            files=list(manifest.files),
            row_count=manifest.total_rows,
            registered_at=record.registered_at,
            offsets=manifest.offsets,
        )

    @property
    def sort_key(self) -> str:
        """Orders pointers as the ledger orders snapshots: LSN, then snapshot id."""
        return snapshot_sort_key(self.lsn, self.snapshot_id)


def pointer_json_schema() -> dict[str, object]:
    """The published JSON Schema of ``latest.json`` v1."""
    schema = LatestPointer.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://snapledger.dev/schemas/latest-pointer-v1.schema.json"
    return schema


class GenerationPointerMember(Stored):
    partition: Annotated[int, Field(ge=0, le=999_999_999)]
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]
    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]
    epoch: Annotated[int, Field(ge=0)]
    prefix: str = Field(description="The member snapshot's folder, relative to the root.")
    manifest_key: str = Field(description="Its _manifest.json (the files, their checksums).")
    offsets: dict[str, int] | None = Field(default=None, description="The manifest's offsets.")


class GenerationPointer(Stored):
    """``generation.json`` format version 1: the newest completed stream snapshot."""

    format_version: Literal[1] = Field(description="Always 1 for this format.")
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    generation: Annotated[int, Field(ge=1)]
    completed_at: datetime = Field(description="Registry time its last member counted.")
    members: list[GenerationPointerMember] = Field(description="One per partition, ascending.")

    @classmethod
    def of(cls, generation: StreamGeneration) -> GenerationPointer:
        assert generation.completed_at is not None
        members = []
        for m in generation.member_list():
            prefix = snapshot_prefix(generation.stream, m.partition, m.lsn, m.snapshot_id)
            members.append(
                GenerationPointerMember(
                    partition=m.partition,
                    snapshot_id=m.snapshot_id,
                    lsn=m.lsn,
                    epoch=m.epoch,
                    prefix=prefix,
                    manifest_key=prefix + MANIFEST_NAME,
                    offsets=m.offsets,
                )
            )
        return cls(
            format_version=1,
            stream=generation.stream,
            generation=generation.generation,
            completed_at=generation.completed_at,
            members=members,
        )


def generation_pointer_json_schema() -> dict[str, object]:
    """The published JSON Schema of ``generation.json`` v1."""
    schema = GenerationPointer.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://snapledger.dev/schemas/generation-pointer-v1.schema.json"
    return schema
