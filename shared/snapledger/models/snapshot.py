"""A snapshot's description, declared once and composed into the models that carry it.

Three groups: what the manifest says the snapshot holds (``SnapshotFields``), the stream
generation it counted for (``GenerationMembership``), and who wrote it (``ProducerFields``).
A fourth, ``GenerationMember``, is a stream generation's member as every model that names
one carries it (the count command, both generation events, the ``GEN#`` record,
``generation.json``).
``ManifestSummary`` (what registration keeps of a valid manifest) is ``SnapshotFields`` and
``ProducerFields`` with the writer's epoch; the ``SnapshotRegistered`` event and the
``SnapshotRecord`` it projects to carry all three.

A model lists its fields in the order of its bases from the last to the first, then its
own; a field it declares again (another default or type) keeps its first position. So a
composed model names the groups before its own base (``class SnapshotRegistered(
ProducerFields, GenerationMembership, SnapshotFields, ManifestEvent)``) and its fields keep
the order they are published in: an event's JSON and its schema list them in that order.
A group is never used alone; its only config is ``defer_build``, so a model composed of it
keeps its own (frozen, strict or lenient about unknown fields).
"""

# No ``from __future__ import annotations`` here: every Lambda function imports these models,
# and pydantic would compile and evaluate each annotation string of each model at import
# (cold start); the annotations name only what is defined above them.

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ChangelogHorizon(BaseModel):
    """How far back the changelog a snapshot was built from could be read, as its producer
    found it (a Kafka Streams changelog topic): what tells whether the changelog can still
    continue the snapshot (``strategies/kafka_streams.py``)."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    log_start_offset: int = Field(description="The topic-partition's log-start offset")
    end_offset: int = Field(description="The topic-partition's end offset")
    delete_retention_ms: int | None = Field(
        default=None, description="The topic's delete.retention.ms (None: not reported)"
    )
    read_at: datetime | None = Field(
        default=None,
        description="When the producer read the end offset (the manifest's created_at)",
    )
    topic_id: str | None = Field(
        default=None,
        description="The changelog topic's id: the incarnation of the topic the snapshot "
        "was made from (None: not reported, as by releases before 2026-11-29)",
    )


class SnapshotFields(BaseModel):
    """What a snapshot's manifest says it holds."""

    model_config = ConfigDict(defer_build=True)

    file_count: int
    total_bytes: int
    row_count: int | None = None
    source_kind: str | None = None
    format: str = Field(default="kv-parquet", description="The manifest's format")
    offsets: dict[str, int] | None = Field(
        default=None, description="The processor's input positions the state matches"
    )
    generation: int | None = Field(
        default=None, description="The stream snapshot generation the manifest names"
    )
    changelog: ChangelogHorizon | None = Field(
        default=None, description="The changelog's horizon as the producer read it, if reported"
    )
    references: tuple[str, ...] | None = Field(
        default=None,
        description="The files it uses outside its own folder, relative to the lineage's "
        "folder (shared/... or an earlier snapshot's): GC deletes none while it is retained "
        "(None: every file is its own)",
    )


class GenerationMembership(BaseModel):
    """The stream snapshot generation a registered snapshot counted for."""

    model_config = ConfigDict(defer_build=True)

    member_of: int | None = Field(
        default=None, description="The generation it counted for (None: it did not count)"
    )


class ProducerFields(BaseModel):
    """Who wrote the snapshot, and its files as they were at registration."""

    model_config = ConfigDict(defer_build=True)

    origin: str | None = Field(
        default=None,
        description="Who wrote it, for a foreign layout (Restate: its cluster name and "
        "fingerprint); every registered snapshot of a lineage has the same",
    )
    files_digest: str | None = Field(
        default=None,
        description="A digest of the files' S3 ETags at registration (a foreign layout's; "
        "heal finds a file rewritten since by it)",
    )


class GenerationMember(BaseModel):
    """A stream generation's member: the snapshot that counted for a partition. Declared
    here once and composed into every model that names one: ``CountGenerationMember``,
    ``StreamSnapshotMemberCounted`` (whose JSON calls the partition ``member``: on the bus a
    top-level ``partition`` names a lineage's events), ``StreamSnapshotCompleted``'s
    members, the ``GEN#`` record's members and ``generation.json``'s members."""

    model_config = ConfigDict(defer_build=True)

    partition: int = Field(description="The member partition")
    snapshot_id: str
    lsn: int
    epoch: int
    offsets: dict[str, int] | None = Field(default=None, description="The manifest's offsets.")


def _member_as_json(name: str) -> str:
    return "member" if name == "partition" else name


#: The config of ``StreamSnapshotMemberCounted``: its JSON (stored, on the bus) names the
#: member's partition ``member``, as a stream event's JSON has no ``partition``.
MEMBER_AS_JSON = ConfigDict(alias_generator=_member_as_json, serialize_by_alias=True)
