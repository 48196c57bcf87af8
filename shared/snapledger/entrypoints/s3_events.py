"""S3 object arrivals, from either of the two shapes AWS delivers them in.

1. The **S3 event notification** (S3 invokes the function directly): a batch of
   ``Records``; each record's ``s3.object.key`` is URL-encoded the way HTML forms are
   (``red flower.jpg`` arrives as ``red+flower.jpg``), so it is decoded with
   ``unquote_plus``.
2. The **EventBridge** ``Object Created`` event from ``aws.s3``: one object, in
   ``detail.object.key``, *not* URL-encoded (see tests/events/README.md for the sources).

The models name only the fields snapledger reads; samples AWS publishes are the tests.
The small models here, rather than Powertools' parser models, keep a cold start from
building ~40 event models a function never sees.
"""

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote_plus, urlsplit

from pydantic import Field, ValidationError

from snapledger.entrypoints.answers import (
    WHOLE_PAYLOAD,
    Intake,
    as_object,
    field_problems,
    payload_error,
)
from snapledger.entrypoints.payloads import AwsEvent

S3_NOTIFICATION = "S3 event notification"
#: What a function triggered by object arrivals accepts, for validation answers.
EXPECTED_SHAPES = (
    "an S3 event notification ({'Records': [{'eventSource': 'aws:s3', 's3': {'bucket': "
    "{'name': ...}, 'object': {'key': ...}}}]}) or an EventBridge 'Object Created' event "
    "from aws.s3 ({'source': 'aws.s3', 'detail-type': 'Object Created', 'detail': "
    "{'bucket': {'name': ...}, 'object': {'key': ...}}})"
)
# The correlation id of a delivery, for Powertools Logger (a JMESPath expression): the S3
# request id of the first record of a notification, else the EventBridge event id.
CORRELATION_ID_PATH = 'Records[0].responseElements."x-amz-request-id" || id'


class _Bucket(AwsEvent):
    name: str = Field(min_length=1)


class _Object(AwsEvent):
    key: str = Field(min_length=1)
    # Which write of the key this is (S3 orders them per key): the FIFO deduplication id.
    sequencer: str | None = None
    e_tag: str | None = Field(default=None, alias="eTag")
    etag: str | None = None  # the EventBridge shape's spelling


class _Entity(AwsEvent):
    bucket: _Bucket
    object_: _Object = Field(alias="object")


class _ResponseElements(AwsEvent):
    request_id: str | None = Field(default=None, alias="x-amz-request-id")


class S3NotificationRecord(AwsEvent):
    """One record of an S3 event notification."""

    event_source: Literal["aws:s3"] = Field(alias="eventSource")
    event_name: str = Field(alias="eventName", description="e.g. ObjectCreated:Put")
    response_elements: _ResponseElements | None = Field(default=None, alias="responseElements")
    s3: _Entity


class _Notification(AwsEvent):
    records: list[Any] = Field(alias="Records")


class _ObjectCreatedDetail(AwsEvent):
    bucket: _Bucket
    object_: _Object = Field(alias="object")
    request_id: str | None = Field(default=None, alias="request-id")


class S3ObjectCreatedEvent(AwsEvent):
    """S3's ``Object Created`` event on EventBridge."""

    id: str
    source: Literal["aws.s3"]
    detail_type: Literal["Object Created"] = Field(alias="detail-type")
    detail: _ObjectCreatedDetail


@dataclass(frozen=True, slots=True)
class ObjectArrival:
    """One object that arrived: where, its decoded key, and what announced it."""

    bucket: str
    key: str
    request_id: str | None
    created: bool  # an ObjectCreated event (a notification may carry others)
    via: Literal["s3", "eventbridge"]
    #: Names this write of the key (S3's sequencer, else the ETag): redeliveries share it.
    write_token: str | None = None


@dataclass(frozen=True, slots=True)
class InvalidRecord:
    """A record of a notification that is not an S3 record: answered, never retried."""

    index: int
    fields: list[dict[str, str]]


Arrival = ObjectArrival | InvalidRecord


def parse_object_arrivals(event: object) -> list[Arrival]:
    """The arrivals an event announces; a ValidationError if it is neither shape.

    Each record of a notification is parsed on its own, so one malformed record is
    answered as ``InvalidRecord`` and does not lose the others.
    """
    event = as_object(event, S3_NOTIFICATION)
    if "Records" in event:
        notification = _Notification.model_validate(event)
        return [_record(index, raw) for index, raw in enumerate(notification.records)]
    if "detail-type" in event or "source" in event:
        created = S3ObjectCreatedEvent.model_validate(event)
        return [
            ObjectArrival(
                bucket=created.detail.bucket.name,
                key=created.detail.object_.key,  # EventBridge keys arrive unencoded
                request_id=created.detail.request_id or created.id,
                created=True,
                via="eventbridge",
                write_token=_write_token(created.detail.object_),
            )
        ]
    raise payload_error(
        S3_NOTIFICATION,
        [("Records", "missing: this is neither an S3 event notification nor an EventBridge event")],
        event,
    )


def arrivals_intake(metric: str) -> Intake[list[Arrival]]:
    """A handler's intake of S3 arrivals, a malformed event counted under ``metric``."""
    return Intake(parse_object_arrivals, S3_NOTIFICATION, metric, expected=EXPECTED_SHAPES)


def _record(index: int, raw: object) -> Arrival:
    try:
        record = S3NotificationRecord.model_validate(raw)
    except ValidationError as exc:
        fields = [
            {"field": _in_record(index, p["field"]), "problem": p["problem"]}
            for p in field_problems(exc)
        ]
        return InvalidRecord(index=index, fields=fields)
    elements = record.response_elements
    return ObjectArrival(
        bucket=record.s3.bucket.name,
        key=unquote_plus(record.s3.object_.key),
        request_id=elements.request_id if elements else None,
        created=record.event_name.startswith("ObjectCreated:"),
        via="s3",
        write_token=_write_token(record.s3.object_),
    )


def _write_token(obj: _Object) -> str | None:
    return obj.sequencer or obj.e_tag or obj.etag


def _in_record(index: int, field: str) -> str:
    return f"Records[{index}]" if field == WHOLE_PAYLOAD else f"Records[{index}].{field}"


def key_in_store(store_uri: str, bucket: str, key: str) -> str | None:
    """``key`` relative to the store's root, or None if the object is outside the root.

    An ``s3://bucket/prefix`` root takes objects of its bucket under its prefix; a local
    (``file://``) root takes the keys the local router sends, already relative to it.
    """
    parts = urlsplit(store_uri)
    if parts.scheme != "s3":
        return key
    if bucket != parts.netloc:
        return None
    prefix = parts.path.strip("/")
    if not prefix:
        return key
    return key.removeprefix(prefix + "/") if key.startswith(prefix + "/") else None
