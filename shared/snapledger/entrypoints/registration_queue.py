"""The registration queue's messages: what intake sends, and the SQS events the consumer gets.

A message's body is the manifest key (relative to the store root); its ``MessageGroupId``
is the lineage (``stream/partition``), so Lambda's event source mapping hands one batch
of a lineage at a time to one invocation; its deduplication id names the object write
(bucket, key, S3 sequencer), so S3 redelivering a notification within SQS's 5-minute
window sends nothing new. A later redelivery is registered again: a ``duplicate``.

The SQS event is the one Lambda's event source mapping delivers (``Records`` with
``eventSource = "aws:sqs"``, ``messageId``, ``body``, ``attributes.MessageGroupId``;
Lambda developer guide, "Using Lambda with Amazon SQS"). Only those fields are read.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from snapledger.entrypoints.payloads import AwsEvent
from snapledger.layouts.lineage import Layouts
from snapledger.layouts.strategy import LayoutStrategy, Placed, Refused

SQS_EVENT = "SQS event"
#: SQS allows up to 128 characters in a message group id.
MAX_GROUP_ID = 128


def lineage_group(key: str, layouts: Layouts[LayoutStrategy]) -> str | None:
    """The message group of a manifest key (any layout's, as ``layouts`` places it): its
    lineage, or None if it names none."""
    return placed_group(layouts.place(key))


def placed_group(placed: Placed | Refused) -> str | None:
    """The message group of a manifest as its catalog placed it: its lineage, or None if
    it names none."""
    if isinstance(placed, Refused):
        return None
    group = f"{placed.location.stream}/{placed.location.partition}"
    if len(group) > MAX_GROUP_ID:  # still one group per lineage, by its digest
        return hashlib.sha256(group.encode()).hexdigest()
    return group


def deduplication_id(bucket: str, key: str, write_token: str | None) -> str:
    """The same for redeliveries of one object write (<= 128 characters)."""
    return hashlib.sha256(f"{bucket}\n{key}\n{write_token or ''}".encode()).hexdigest()


class _Attributes(AwsEvent):
    group_id: str = Field(alias="MessageGroupId", min_length=1)


class SqsRecord(AwsEvent):
    """One message of an SQS delivery to Lambda."""

    event_source: Literal["aws:sqs"] = Field(alias="eventSource")
    message_id: str = Field(alias="messageId", min_length=1)
    body: str = Field(min_length=1)
    attributes: _Attributes


class SqsEvent(AwsEvent):
    records: list[SqsRecord] = Field(alias="Records", min_length=1)


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    """A manifest key as the consumer receives it."""

    message_id: str
    group_id: str
    key: str


def is_sqs_event(event: object) -> bool:
    """Whether ``event`` is a delivery from an SQS queue (its first record says so)."""
    if not isinstance(event, Mapping):
        return False
    records: Any = event.get("Records")
    return (
        isinstance(records, list)
        and bool(records)
        and isinstance(records[0], Mapping)
        and records[0].get("eventSource") == "aws:sqs"
    )


def parse_queued(event: object) -> list[QueuedMessage]:
    """The messages of an SQS delivery; a ValidationError names the fields at fault."""
    parsed = SqsEvent.model_validate(event)
    return [
        QueuedMessage(message_id=r.message_id, group_id=r.attributes.group_id, key=r.body)
        for r in parsed.records
    ]
