"""Manifest format v1: the ``_manifest.json`` a writer puts last into a snapshot prefix.

The JSON Schema in ``docs/manifest-v1.schema.json`` is generated from this model
(``make schema``); a test fails when the two differ.
"""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from snapledger.job_kinds import JOB_KIND_NAMES
from snapledger.layout import STREAM_PATTERN, ULID_PATTERN
from snapledger.limits import (
    MAX_COUNT,
    MAX_EPOCH,
    MAX_LSN,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
    MAX_OFFSETS,
    MAX_OFFSETS_BYTES,
    MAX_PARTITION,
    MAX_REFERENCE_PATH_CHARS,
    MAX_REFERENCES,
    MAX_RETENTION_MS,
)
from snapledger.models.base import Frozen

__all__ = [
    "CHECKSUM_ALGORITHMS",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_FILES",
    "MAX_OFFSETS",
    "TOPIC_ID_PATTERN",
    "ManifestChangelog",
    "ManifestFile",
    "ManifestProducer",
    "ManifestReference",
    "ManifestSource",
    "ManifestV1",
    "SnapshotFormat",
    "manifest_json_schema",
]
#: The checksum algorithms a manifest may name: the three S3 stores as additional
#: checksums (``crc64nvme``, ``crc32c``, ``sha256``), and ``md5``.
CHECKSUM_ALGORITHMS = ("crc64nvme", "crc32c", "sha256", "md5")
#: A Kafka topic id as Kafka prints it (``kafka-topics.sh --describe``, ``Uuid.toString``):
#: the topic's 16-byte UUID in URL-safe base64 without padding, 22 characters.
TOPIC_ID_PATTERN = "[A-Za-z0-9_-]{22}"
#: ``kv-parquet``: Parquet files of ``key``, ``value``, ``lsn``, the columns the jobs
#: read. ``opaque``: any files (e.g. a RocksDB checkpoint), registered, retained and
#: collected like any other, but refused as a job's base.
SnapshotFormat = Literal["kv-parquet", "opaque"]


class ManifestFile(Frozen):
    """One data file of the snapshot, relative to the snapshot prefix."""

    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=1024,
            description="Path relative to the snapshot prefix, e.g. 'part-00000.parquet'. "
            "No leading '/', no '.' or '..' segments, no '%' or '\\\\'.",
        ),
    ]
    size: Annotated[int, Field(ge=0, le=MAX_COUNT, description="Size in bytes, as stored.")]
    rows: Annotated[
        int | None, Field(default=None, ge=0, le=MAX_COUNT, description="Row count.")
    ] = None
    checksum: Annotated[
        str | None,
        Field(
            default=None,
            pattern=rf"^({'|'.join(CHECKSUM_ALGORITHMS)}):[0-9A-Za-z+/=]+$",
            description="Optional '{algorithm}:{digest}', algorithm one of "
            f"{', '.join(CHECKSUM_ALGORITHMS)}; e.g. 'sha256:<hex>' or S3's base64 form "
            "'crc64nvme:<base64>'.",
        ),
    ] = None


class ManifestReference(Frozen):
    """A file the snapshot uses that lives outside its own folder, in its lineage's area:
    an earlier snapshot's file, or one of the lineage's ``shared/`` folder (RocksDB SSTs an
    incremental snapshot shares with earlier ones)."""

    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_REFERENCE_PATH_CHARS,
            description="Path relative to the lineage's folder (snapshots/{stream}/"
            "{partition}/): 'shared/{name}' or '{lsn:020d}-{snapshot_id}/{name}' of an "
            "earlier registered snapshot. No leading '/', no '.' or '..' segments.",
        ),
    ]
    size: Annotated[int, Field(ge=0, le=MAX_COUNT, description="Size in bytes, as stored.")]
    checksum: Annotated[
        str | None,
        Field(
            default=None,
            pattern=rf"^({'|'.join(CHECKSUM_ALGORITHMS)}):[0-9A-Za-z+/=]+$",
            description="Optional '{algorithm}:{digest}', as a file's.",
        ),
    ] = None


class ManifestProducer(Frozen):
    """Who wrote the snapshot."""

    name: Annotated[str, Field(min_length=1, max_length=256)]
    version: Annotated[str | None, Field(default=None, max_length=128)] = None


#: A snapshot written by the stream processor itself; the other source kinds are the jobs'.
PROCESSOR_SOURCE = "processor"

if TYPE_CHECKING:
    SourceKind = str
else:  # the literal's values come from the job-kinds table (the schema lists them)
    SourceKind = Literal[(PROCESSOR_SOURCE, *JOB_KIND_NAMES)]


class ManifestSource(Frozen):
    """What the snapshot was built from."""

    kind: SourceKind = Field(
        description="'processor': written by the stream processor itself; "
        "'bootstrap'/'compaction': written by a snapledger job."
    )
    base_snapshot_id: Annotated[str | None, Field(default=None, pattern=f"^{ULID_PATTERN}$")] = None
    base_lsn: Annotated[int | None, Field(default=None, ge=0, le=MAX_LSN)] = None
    changelog_from_lsn: Annotated[int | None, Field(default=None, ge=0, le=MAX_LSN)] = None
    job_id: Annotated[str | None, Field(default=None, max_length=128)] = None


class ManifestChangelog(Frozen):
    """The changelog topic-partition the snapshot was read from, as the producer read it
    before consuming (a Kafka Streams changelog: docs/kafka-streams.md)."""

    log_start_offset: Annotated[
        int, Field(ge=0, le=MAX_LSN, strict=True, description="The log-start offset it read.")
    ]
    end_offset: Annotated[
        int, Field(ge=0, le=MAX_LSN, strict=True, description="The end offset it read.")
    ]
    delete_retention_ms: Annotated[
        int | None,
        Field(
            default=None,
            ge=0,
            le=MAX_RETENTION_MS,
            strict=True,
            description="The topic's delete.retention.ms: how long compaction keeps a "
            "tombstone; a snapshot older than that is not counted as restorable.",
        ),
    ] = None
    topic_id: Annotated[
        str | None,
        Field(
            default=None,
            pattern=f"^{TOPIC_ID_PATTERN}$",
            description="The topic's id as Kafka prints it (22 characters of URL-safe "
            "base64): which incarnation of the topic the snapshot was made from. A topic "
            "deleted and recreated under the same name has another id, and a snapshot of "
            "another incarnation is never used with it.",
        ),
    ] = None

    @model_validator(mode="after")
    def _start_not_past_end(self) -> "ManifestChangelog":
        if self.log_start_offset > self.end_offset:
            raise ValueError(
                f"log_start_offset {self.log_start_offset} is past end_offset "
                f"{self.end_offset}: give the offsets as the topic reported them"
            )
        return self


class ManifestV1(Frozen):
    """Manifest format version 1."""

    format_version: Literal[1] = Field(description="Always 1 for this format.")
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    partition: Annotated[int, Field(ge=0, le=MAX_PARTITION)]
    lsn: Annotated[
        int, Field(ge=0, le=MAX_LSN, description="State includes every record with lsn <= this.")
    ]
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$", description="A ULID.")]
    epoch: Annotated[
        int,
        Field(
            ge=0,
            le=MAX_EPOCH,
            description="Writer's leader epoch: a registration from an epoch below the "
            "lineage's highest is fenced.",
        ),
    ]
    created_at: datetime | None = Field(
        default=None,
        description="Producer's clock. Informational, except with changelog: then it is when "
        "the producer read the changelog's end offset, and retention counts the snapshot as "
        "restorable only while it is younger than the topic's delete.retention.ms.",
    )
    producer: ManifestProducer
    source: ManifestSource
    files: Annotated[list[ManifestFile], Field(max_length=MAX_MANIFEST_FILES)]
    row_count: Annotated[int | None, Field(default=None, ge=0, le=MAX_COUNT)] = None
    format: SnapshotFormat = Field(
        default="kv-parquet",
        description="'kv-parquet' (the default): Parquet files of key, value, lsn, which "
        "the jobs read. 'opaque': any files, e.g. a RocksDB checkpoint; registered, "
        "retained and collected, but refused as a job's base.",
    )
    offsets: Annotated[
        dict[
            Annotated[str, Field(min_length=1, max_length=256)],
            Annotated[int, Field(ge=0, le=MAX_LSN, strict=True)],
        ]
        | None,
        Field(
            default=None,
            max_length=MAX_OFFSETS,
            description="The processor's input positions the state matches, e.g. "
            "{'orders-3': 18213}: returned by queries and in a restore's _restore.json.",
        ),
    ] = None
    generation: Annotated[
        int | None,
        Field(
            default=None,
            ge=1,
            le=MAX_COUNT,
            strict=True,
            description="The stream snapshot generation this snapshot answers (the "
            "'generation' of a StreamSnapshotRequested event): it counts for that "
            "generation when its LSN is at or above the partition's minimum.",
        ),
    ] = None

    changelog: ManifestChangelog | None = Field(
        default=None,
        description="Optional: the changelog topic-partition the snapshot was read from, as "
        "read before consuming (its log-start and end offsets, its delete.retention.ms); "
        "with created_at, it says until when the changelog can continue the snapshot.",
    )
    references: Annotated[
        list[ManifestReference] | None,
        Field(
            default=None,
            max_length=MAX_REFERENCES,
            description="Optional: files the snapshot uses outside its own folder (an "
            "earlier snapshot's, or the lineage's shared/ folder), each with its size. GC "
            "deletes a file only once no retained snapshot references it. Absent: every "
            "file is the snapshot's own.",
        ),
    ] = None

    @model_validator(mode="after")
    def _totals_bounded(self) -> "ManifestV1":
        """The totals the ledger stores stay int64, the offsets fit a ledger item, and only
        an opaque snapshot references files (the jobs read a kv-parquet one's own files)."""
        if self.references and self.format != "opaque":
            raise ValueError(
                'references are for "format": "opaque" snapshots (e.g. RocksDB SSTs shared '
                "with earlier snapshots); a kv-parquet snapshot lists its own files, which "
                "the jobs read"
            )
        if self.total_bytes > MAX_COUNT:
            raise ValueError(
                f"the files' sizes add up to {self.total_bytes:,} bytes, above {MAX_COUNT:,}"
            )
        rows = sum(f.rows or 0 for f in self.files)
        if rows > MAX_COUNT:
            raise ValueError(f"the files' rows add up to {rows:,}, above {MAX_COUNT:,}")
        if self.offsets:
            size = sum(len(name.encode()) + 20 for name in self.offsets)
            if size > MAX_OFFSETS_BYTES:
                raise ValueError(
                    f"offsets take about {size:,} bytes, above {MAX_OFFSETS_BYTES:,}: "
                    "keep one position per input partition, with short names"
                )
        return self

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def total_rows(self) -> int | None:
        if self.row_count is not None:
            return self.row_count
        if all(f.rows is not None for f in self.files):
            return sum(f.rows or 0 for f in self.files)
        return None


def manifest_json_schema() -> dict[str, object]:
    """The published JSON Schema of manifest v1."""
    schema = ManifestV1.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://snapledger.dev/schemas/manifest-v1.schema.json"
    return schema
