"""What the snapledger bus publishes from the ledger: one EventBridge event per ``EV#`` item.

Each event has ``source = snapledger.ledger``, ``detail-type`` = the event's ``type`` and
``detail`` = the event model's JSON, exactly ``model_dump(mode="json")``: ``type``,
``seq``, ``at``, ``stream``, ``partition`` (a lineage's events only), ``command_id`` and the
type's own fields. The types are the members of the ``LedgerEvent`` union (a lineage's log)
and of the ``StreamEvent`` union (a stream's own log), read from them here, so a type
added to either union is published (and gets a schema) with no change in this module;
plus ``LedgerEventUndecodable``, for a stream record the enrichment could not decode.
"""

from typing import Literal, get_args

from pydantic import BaseModel, Field

from snapledger.models.base import Frozen
from snapledger.models.events import LedgerEvent, StreamEvent

LEDGER_EVENT_SOURCE = "snapledger.ledger"
# The item attribute (and event field) naming the type: the union's discriminator.
EVENT_TYPE_ATTRIBUTE = "type"


class LedgerEventUndecodable(Frozen):
    """A new ``EV#`` item whose event this code cannot read, published instead of it.

    Its item stays in the ledger table at (``pk``, ``sk``). Causes: a type written by newer
    code than the enrichment runs (a deploy in progress), or an item written by hand. It is
    also routed to the events Pipe's failure queue, whose alarm fires (docs/events.md).
    """

    type: Literal["LedgerEventUndecodable"] = "LedgerEventUndecodable"
    pk: str | None = Field(description="Partition key of the item (None if the record had none)")
    sk: str | None = Field(description="Sort key of the item, ``EV#{seq:012d}``")
    event_type: str | None = Field(description="The item's ``type`` attribute, if it is a string")
    reason: str = Field(description="What could not be decoded, and what to do")
    stream_event_id: str | None = Field(description="``eventID`` of the stream record")
    stream_sequence_number: str | None = Field(
        description="``dynamodb.SequenceNumber`` of the stream record"
    )
    event_source_arn: str | None = Field(description="The table stream the record came from")


def _members(annotated_union: object) -> tuple[type[BaseModel], ...]:
    union = get_args(annotated_union)[0]  # Annotated[Union[...], Field(discriminator="type")]
    return tuple(get_args(union))


def ledger_event_models() -> tuple[type[BaseModel], ...]:
    """Every event type of both logs: the ``LedgerEvent`` union, then ``StreamEvent``."""
    return (*_members(LedgerEvent), *_members(StreamEvent))


def published_event_models() -> tuple[type[BaseModel], ...]:
    """Every type the Pipe publishes: the ledger's events, then ``LedgerEventUndecodable``."""
    return (*ledger_event_models(), LedgerEventUndecodable)


def event_type_name(model: type[BaseModel]) -> str:
    """The ``type`` a model's events carry (its discriminator), e.g. ``SnapshotRegistered``."""
    name = model.model_fields[EVENT_TYPE_ATTRIBUTE].default
    if not isinstance(name, str):  # pragma: no cover - every event model has a type literal
        raise TypeError(f"{model.__name__} has no default 'type'")
    return name
