"""Pointer objects in the bucket, readable with one GET without the registry.

- ``snapshots/{stream}/{partition}/latest.json`` (``LatestPointer``): a lineage's latest
  snapshot, written after the latest pointer advances (``services/latest_pointer.py``);
- ``snapshots/{stream}/generation.json`` (``GenerationPointer``): the stream's newest
  completed stream snapshot, written after the registration that completed it.

So a processor can find and check its state with one GET, even while the registry's
functions or table are unreachable.

Anyone who may write to the bucket can plant or copy such an object, so none is trusted
for what it says of itself: ``parse_pointer`` reads one (bounded by ``MAX_POINTER_BYTES``,
never raising anything but ``PointerUnreadableError``), ``LatestPointer.lineage_problem``
and ``GenerationPointer.stream_problem`` say whether it names only the asked lineage's (or
stream's) snapshots, each at its own key. Readers refuse one that does not; the registry
compares it with the ledger and replaces it unless it is exactly what the ledger says.

The JSON Schemas in ``docs/latest-pointer-v1.schema.json``
and ``docs/generation-pointer-v1.schema.json`` are generated from these models
(``make schema``); a test fails when they differ.
"""

from datetime import datetime
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import Field, ValidationError

from snapledger.layout import (
    GENERATION_POINTER_NAME,
    LATEST_POINTER_NAME,
    MANIFEST_NAME,
    MAX_LSN,
    STREAM_PATTERN,
    ULID_PATTERN,
    SnapshotLocation,
    snapshot_prefix,
)
from snapledger.limits import MAX_PARTITION, MAX_POINTER_BYTES
from snapledger.models.base import Stored
from snapledger.models.generations import StreamGeneration
from snapledger.models.ledger import SnapshotRecord, snapshot_sort_key
from snapledger.models.manifest import (
    MAX_OFFSETS,
    ManifestFile,
    ManifestReference,
    ManifestV1,
    SnapshotFormat,
)
from snapledger.models.snapshot import GenerationMember


class LatestPointer(Stored):
    """Pointer format version 1 (fields a newer version adds are ignored when read)."""

    object_name: ClassVar[str] = LATEST_POINTER_NAME

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
    references: list[ManifestReference] | None = Field(
        default=None,
        description="As the manifest lists them: the files it uses outside its folder, each "
        "path relative to the lineage's folder (the prefix's parent). Absent: none.",
    )

    @classmethod
    def of(cls, record: SnapshotRecord, manifest: ManifestV1) -> "LatestPointer":
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
            references=manifest.references,
        )

    @property
    def sort_key(self) -> str:
        """Orders pointers as the ledger orders snapshots: LSN, then snapshot id."""
        return snapshot_sort_key(self.lsn, self.snapshot_id)

    def lineage_problem(self, stream: str, partition: int) -> str | None:
        """Why this is not a pointer of lineage ``stream/partition`` (None: it is): it must
        name that stream and partition, and its snapshot at exactly its own key,
        ``snapshots/{stream}/{partition}/{lsn:020d}-{id}/`` and its ``_manifest.json``."""
        if (self.stream, self.partition) != (stream, partition):
            return (
                f"it names {self.stream}/{self.partition}'s snapshot {self.snapshot_id} at "
                f"LSN {self.lsn}, not one of {stream}/{partition}"
            )
        return _key_problem(
            "its",
            stream,
            partition,
            self.lsn,
            self.snapshot_id,
            prefix=self.prefix,
            manifest_key=self.manifest_key,
        )


def pointer_json_schema() -> dict[str, object]:
    """The published JSON Schema of ``latest.json`` v1."""
    schema = LatestPointer.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://snapledger.dev/schemas/latest-pointer-v1.schema.json"
    return schema


# A member as generation.json names it: the member (models/snapshot.py) with its snapshot's
# keys. A consumer reads this object from the bucket, not from the ledger, so the member's
# numbers and id are narrowed here to their bounds (docs/limits.md).
class GenerationPointerMember(GenerationMember, Stored):
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITION)]
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]
    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]
    epoch: Annotated[int, Field(ge=0)]
    prefix: str = Field(description="The member snapshot's folder, relative to the root.")
    manifest_key: str = Field(description="Its _manifest.json (the files, their checksums).")


class GenerationPointer(Stored):
    """``generation.json`` format version 1: the newest completed stream snapshot."""

    object_name: ClassVar[str] = GENERATION_POINTER_NAME

    format_version: Literal[1] = Field(description="Always 1 for this format.")
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    generation: Annotated[int, Field(ge=1)]
    completed_at: datetime = Field(description="Registry time its last member counted.")
    members: list[GenerationPointerMember] = Field(description="One per partition, ascending.")

    @classmethod
    def of(cls, generation: StreamGeneration) -> "GenerationPointer":
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

    def stream_problem(self, stream: str) -> str | None:
        """Why this is not a ``generation.json`` of ``stream`` (None: it is): it must name
        that stream, each partition once, and each member's snapshot at exactly its own key
        in that partition's lineage."""
        if self.stream != stream:
            return (
                f"it names stream {self.stream!r}'s generation {self.generation}, not {stream!r}'s"
            )
        partitions = [m.partition for m in self.members]
        if len(set(partitions)) != len(partitions):
            return "it names a partition more than once"
        for m in self.members:
            problem = _key_problem(
                f"member {m.partition}'s",
                stream,
                m.partition,
                m.lsn,
                m.snapshot_id,
                prefix=m.prefix,
                manifest_key=m.manifest_key,
            )
            if problem is not None:
                return problem
        return None


def _key_problem(
    whose: str,
    stream: str,
    partition: int,
    lsn: int,
    snapshot_id: str,
    *,
    prefix: str,
    manifest_key: str,
) -> str | None:
    own = snapshot_prefix(stream, partition, lsn, snapshot_id)
    if prefix != own:
        return f"{whose} prefix is {prefix!r}, not its snapshot's own {own!r}"
    if manifest_key != own + MANIFEST_NAME:
        return f"{whose} manifest_key is {manifest_key!r}, not {own + MANIFEST_NAME!r}"
    return None


PointerT = TypeVar("PointerT", LatestPointer, GenerationPointer)


class PointerUnreadableError(ValueError):
    """The object is not a pointer snapledger wrote: too large, not JSON, nested past any
    pointer's shape, or not valid format v1. ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_pointer(model: type[PointerT], raw: bytes) -> PointerT:
    """``raw`` as ``model`` (``latest.json`` or ``generation.json`` v1); otherwise
    PointerUnreadableError with the reason, never another exception (pydantic's JSON parser
    refuses nesting past its recursion limit and numbers past its range itself)."""
    if len(raw) > MAX_POINTER_BYTES:
        raise PointerUnreadableError(
            f"{model.object_name} is {len(raw):,} bytes or more, over the "
            f"{MAX_POINTER_BYTES:,}-byte limit of a pointer"
        )
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise PointerUnreadableError(
            f"not a valid {model.object_name} v1 ({exc.error_count()} error(s), first: "
            f"{where}: {err['msg']})"
        ) from exc


def generation_pointer_json_schema() -> dict[str, object]:
    """The published JSON Schema of ``generation.json`` v1."""
    schema = GenerationPointer.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://snapledger.dev/schemas/generation-pointer-v1.schema.json"
    return schema
