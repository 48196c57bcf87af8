"""Item shapes of the ledger table: models to DynamoDB items and back.

TTL: an item that no reader needs once it is terminal carries ``ttl`` (epoch seconds;
``ttl_of``): its terminal time plus the configured window. Live items never carry it.
Every function here is a function of the model (and the window): no clock.

Numbers are DynamoDB numbers both ways: a float field (a policy's hours) is written as a
number (boto3's serializer takes only ``Decimal``) and read back as an ``int`` when whole,
else a ``float``, so strict integer fields validate what they wrote.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, get_args

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import BaseModel

from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    PARTITION_KEY,
    REGISTERED_SK_ATTRIBUTE,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from snapledger.limits import MAX_HOLD_HOURS, MAX_SORT_KEY_BYTES
from snapledger.models.event_evolution import current_type_name
from snapledger.models.events import (
    EVENT_ADAPTER,
    STREAM_EVENT_ADAPTER,
    LedgerEvent,
    StreamEvent,
)
from snapledger.models.generations import GenerationStatus, StreamGeneration
from snapledger.models.jobs import JobRecord
from snapledger.models.ledger import Head, LineageId, SnapshotRecord, SnapshotStatus, StreamHead
from snapledger.models.policy import StoredPolicy
from snapledger.models.upcasting import UNVERSIONED, EventVersionError, upcast

HEAD_SK = "HEAD"
POLICY_SK = "POLICY"
GENERATION_PREFIX = "GEN#"
SNAP_PREFIX = "SNAP#"
EVENT_PREFIX = "EV#"
SEQ_WIDTH = 12
UNPLACEABLE_PK = "REJECTED"
UNPLACEABLE_PREFIX = "KEY#"
SNAPSHOT_KIND_PREFIX = "SNAPSHOT#"
#: The producer-offsets registry: ``PRODUCER#{producer_id}`` / ``OFFSETS``, in ``by_kind``.
PRODUCER_PREFIX = "PRODUCER#"
PRODUCER_OFFSETS_SK = "OFFSETS"
PRODUCER_OFFSETS_KIND = "PRODUCER_OFFSETS"
#: ``registered_sk`` of the SNAP items GC reads besides REGISTERED ones (whose is ``sk``):
#: outside the ``SNAP#`` range the as-of lookups read, inside the lineage's index partition.
LIVE_INDEX_PREFIXES = {
    SnapshotStatus.EXPIRING: "EXPIRING#",
    SnapshotStatus.REJECTED: "REJECTED#",
}
#: How long a terminal item stays before DynamoDB's TTL removes it, unless configured.
DEFAULT_TTL_WINDOW = timedelta(days=30)
_KEY_ATTRIBUTES = (PARTITION_KEY, SORT_KEY, KIND_ATTRIBUTE, REGISTERED_SK_ATTRIBUTE, TTL_ATTRIBUTE)


def _event_types(union: object) -> frozenset[str]:
    return frozenset(model.model_fields["type"].default for model in get_args(get_args(union)[0]))


KNOWN_EVENT_TYPES = _event_types(LedgerEvent)
KNOWN_STREAM_EVENT_TYPES = _event_types(StreamEvent)

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

Item = dict[str, Any]


def unplaceable_sk(manifest_key: str) -> str:
    """The sort key of the ``REJECTED`` item of a manifest at a key naming no lineage:
    ``KEY#`` and the key itself when that fits in a sort key (UTF-8 bytes), else
    ``KEY#sha256:`` and the key's digest (the item keeps the whole key in ``manifest_key``).
    A function of the key alone, so a redelivery finds the first record."""
    verbatim = UNPLACEABLE_PREFIX + manifest_key
    if len(verbatim.encode("utf-8", "surrogatepass")) <= MAX_SORT_KEY_BYTES:
        return verbatim
    digest = hashlib.sha256(manifest_key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{UNPLACEABLE_PREFIX}sha256:{digest}"


def lineage_pk(lineage: LineageId) -> str:
    return f"LIN#{lineage.stream}#{lineage.partition}"


def stream_pk(stream: str) -> str:
    """The partition of a stream's own items: its HEAD, its log and its POLICY."""
    return f"STREAM#{stream}"


def generation_sk(generation: int) -> str:
    return f"{GENERATION_PREFIX}{generation:012d}"


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:0{SEQ_WIDTH}d}"


def key(pk: str, sk: str) -> Item:
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}


def to_item(
    pk: str,
    sk: str,
    model: BaseModel,
    *,
    kind: str | None = None,
    expires: datetime | None = None,
) -> Item:
    """A low-level DynamoDB item holding ``model``'s fields beside the keys (and its TTL
    when ``expires`` is given)."""
    body = json.loads(
        json.dumps(model.model_dump(mode="json", exclude_none=True)), parse_float=Decimal
    )
    item = {name: _serializer.serialize(value) for name, value in body.items()}
    item.update(key(pk, sk))
    if kind is not None:
        item[KIND_ATTRIBUTE] = {"S": kind}
    if expires is not None:
        item[TTL_ATTRIBUTE] = ttl_value(expires)
    return item


# --- TTL: when a terminal item may go ------------------------------------------------------


def ttl_value(expires: datetime) -> Any:
    """The TTL attribute's value: epoch seconds, as DynamoDB's TTL reads it."""
    return {"N": str(int(expires.timestamp()))}


def ttl_of(item: Item) -> int | None:
    """The item's TTL in epoch seconds, or None for an item that never expires."""
    value = item.get(TTL_ATTRIBUTE)
    return int(value["N"]) if value else None


def _after(terminal_at: datetime | None, window: timedelta | None) -> datetime | None:
    if terminal_at is None or window is None:
        return None
    return _plus(terminal_at, window)


def _plus(at: datetime, delta: timedelta) -> datetime:
    """``at + delta``, or the calendar's last instant where that sum would overflow (a
    date stored before its bound existed, e.g. a hold until 9999-12-31)."""
    try:
        return at + delta
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def snapshot_expires(record: SnapshotRecord, window: timedelta | None) -> datetime | None:
    """When a snapshot record may go: a DELETED one ``window`` after its deletion; a
    REJECTED one ``window`` after it was recorded, or after its last hold ends (never while
    a hold without an end is on it). Live (REGISTERED, EXPIRING) records: never."""
    if record.status is SnapshotStatus.DELETED:
        return _after(record.deleted_at or record.expiring_at or record.registered_at, window)
    if record.status is not SnapshotStatus.REJECTED:
        return None
    if any(hold.expires_at is None for hold in record.holds):
        return None
    # A hold counts until its expiry, at most MAX_HOLD_HOURS after it was put.
    ends = [
        min(hold.expires_at, _plus(hold.at, timedelta(hours=MAX_HOLD_HOURS)))
        for hold in record.holds
        if hold.expires_at is not None
    ]
    return _after(max([record.registered_at, *ends]), window)


def job_expires(job: JobRecord, window: timedelta | None) -> datetime | None:
    """When a job's items may go: ``window`` after it finished; never while it runs."""
    return _after(job.updated_at, window) if job.terminal else None


def event_expires(event: LedgerEvent | StreamEvent, window: timedelta | None) -> datetime | None:
    """When an event may go: ``window`` after it happened (the archive keeps it longer)."""
    return _after(event.at, window)


def plain(item: Item) -> dict[str, Any]:
    return {
        name: _json_numbers(_deserializer.deserialize(value))
        for name, value in item.items()
        if name not in _KEY_ATTRIBUTES
    }


def _json_numbers(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    return value


#: HEAD items' ``by_kind`` key is sharded, ``HEAD#{n}``: one key would take every
#: registration's index write (a hot partition near 1,000 a second). ``n`` is a stable hash
#: of the lineage, so a lineage's HEAD stays on one shard. Items written before the
#: sharding carry ``LEGACY_HEAD_KIND`` until a command rewrites them or the backfill runs.
HEAD_KIND_SHARDS = 8
LEGACY_HEAD_KIND = "HEAD"
HEAD_KINDS = (LEGACY_HEAD_KIND, *(f"HEAD#{n}" for n in range(HEAD_KIND_SHARDS)))


def head_kind(lineage: LineageId) -> str:
    """The ``by_kind`` key of the lineage's HEAD: its shard."""
    digest = hashlib.sha256(f"{lineage.stream}#{lineage.partition}".encode()).digest()
    return f"HEAD#{int.from_bytes(digest[:4], 'big') % HEAD_KIND_SHARDS}"


def head_item(head: Head) -> Item:
    return to_item(lineage_pk(head.lineage), HEAD_SK, head, kind=head_kind(head.lineage))


def snapshot_kind(snapshot_id: str) -> str:
    """The SNAP item's ``by_kind`` key: its snapshot found by id in one Query."""
    return SNAPSHOT_KIND_PREFIX + snapshot_id


def snapshot_lookup_keys(record: SnapshotRecord) -> Item:
    """The index keys a SNAP item carries: by id always; in ``registered`` while REGISTERED."""
    keys: Item = {KIND_ATTRIBUTE: {"S": snapshot_kind(record.snapshot_id)}}
    live_sk = registered_index_sk(record)
    if live_sk is not None:
        keys[REGISTERED_SK_ATTRIBUTE] = {"S": live_sk}
    return keys


def registered_index_sk(record: SnapshotRecord) -> str | None:
    """The record's sort key in the ``registered`` index: ``sk`` while REGISTERED (the
    as-of lookups' ``SNAP#`` range), prefixed while EXPIRING or REJECTED (GC reads them),
    none once DELETED (nothing reads it from the index)."""
    if record.status is SnapshotStatus.REGISTERED:
        return record.sort_key
    prefix = LIVE_INDEX_PREFIXES.get(record.status)
    return None if prefix is None else prefix + record.sort_key


def snapshot_item(record: SnapshotRecord, ttl_window: timedelta | None = None) -> Item:
    pk = lineage_pk(LineageId(stream=record.stream, partition=record.partition))
    # A whole-item Put: a snapshot changing status gets (or drops) its index key and TTL.
    expires = snapshot_expires(record, ttl_window)
    return {**to_item(pk, record.sort_key, record, expires=expires), **snapshot_lookup_keys(record)}


def event_item(event: LedgerEvent, ttl_window: timedelta | None = None) -> Item:
    pk = lineage_pk(LineageId(stream=event.stream, partition=event.partition))
    return _stored_event(pk, event, ttl_window)


def stream_head_item(head: StreamHead) -> Item:
    # No ``kind``: the by_kind index pages lineage HEADs only (GC's walk).
    return to_item(stream_pk(head.stream), HEAD_SK, head)


def stream_event_item(event: StreamEvent, ttl_window: timedelta | None = None) -> Item:
    return _stored_event(stream_pk(event.stream), event, ttl_window)


#: The ``EV#`` item attribute holding the version of its event's type (models/upcasting.py).
#: Beside the event's fields, not one of them: the event's JSON (on the bus) has no version.
#: Written only above version 1: an item without it is version 1, as every item written
#: before versions were is, and a release from before versions still reads it.
EVENT_VERSION_ATTRIBUTE = "schema_version"


def _stored_event(pk: str, event: LedgerEvent | StreamEvent, window: timedelta | None) -> Item:
    item = to_item(pk, event_sk(event.seq), event, expires=event_expires(event, window))
    if type(event).schema_version != UNVERSIONED:
        item[EVENT_VERSION_ATTRIBUTE] = {"N": str(type(event).schema_version)}
    return item


def stored_event_version(item: Item) -> int:
    """The version an ``EV#`` item's event was stored at: 1 when the item has none."""
    value = item.get(EVENT_VERSION_ATTRIBUTE)
    if value is None:
        return UNVERSIONED
    number = value.get("N") if isinstance(value, dict) else None
    if not isinstance(number, str) or not number.isdecimal() or len(number) > 9:
        raise EventVersionError(
            f"the event item's {EVENT_VERSION_ATTRIBUTE!r} is {value!r}, not a version: a "
            'stored event\'s version is a whole number, e.g. {"N": "2"}. Repair the item '
            "(an item written by hand?)"
        )
    return int(number)


def stored_event_fields(item: Item) -> dict[str, Any]:
    """The fields of an ``EV#`` item's event, as the current version of its type has them
    (its stored version passed through the type's upcasters)."""
    fields = plain({k: v for k, v in item.items() if k != EVENT_VERSION_ATTRIBUTE})
    return upcast(fields, stored_event_version(item))


def policy_item(stored: StoredPolicy) -> Item:
    # One JSON string: the item's shape since before the stream's log existed (readers of
    # either age read it); ``version`` beside it for the write conditions.
    return {
        **key(stream_pk(stored.stream), POLICY_SK),
        "document": {"S": json.dumps(stored.model_dump(mode="json"), sort_keys=True)},
        "version": {"N": str(stored.version)},
    }


def generation_item(generation: StreamGeneration, ttl_window: timedelta | None = None) -> Item:
    # A FAILED generation is history: it goes with the TTL window, as a terminal record
    # does. A COMPLETED one stays: it can be restored while its members are retained.
    failed = generation.failed_at if generation.status is GenerationStatus.FAILED else None
    expires = None if failed is None else _after(failed, ttl_window)
    pk, sk = stream_pk(generation.stream), generation_sk(generation.generation)
    return to_item(pk, sk, generation, expires=expires)


def generation_from_item(item: Item) -> StreamGeneration:
    return StreamGeneration.model_validate(plain(item))


def policy_from_item(item: Item) -> StoredPolicy:
    return StoredPolicy.model_validate_json(item["document"]["S"])


def stream_head_from_item(item: Item) -> StreamHead:
    return StreamHead.model_validate(plain(item))


def stream_event_from_item(item: Item) -> StreamEvent:
    return STREAM_EVENT_ADAPTER.validate_python(stored_event_fields(item))


def head_from_item(item: Item) -> Head:
    return Head.model_validate(plain(item))


def snapshot_from_item(item: Item) -> SnapshotRecord:
    return SnapshotRecord.model_validate(plain(item))


def event_from_item(item: Item) -> LedgerEvent:
    return EVENT_ADAPTER.validate_python(stored_event_fields(item))


def item_event_type(item: Item) -> str | None:
    """The type an ``EV#`` item's event reads as: its ``type``, a renamed one's current name
    (``models/event_evolution.py``); None when it has no string ``type``."""
    value = item.get("type")
    stored = value.get("S") if isinstance(value, dict) else None
    return current_type_name(stored) if isinstance(stored, str) else None


def any_event_from_item(item: Item) -> LedgerEvent | StreamEvent:
    """The event of an ``EV#`` item of either log, told apart by its ``type``."""
    if item_event_type(item) in KNOWN_STREAM_EVENT_TYPES:
        return stream_event_from_item(item)
    return event_from_item(item)
