"""The producer-offsets registry's console payloads (docs/console.md, docs/fluss.md): the
query function reads an entry (``producer_offsets``), the launch function registers and
deletes one (``producer_offsets_register``, ``producer_offsets_delete``). Each bad field is
answered by a validation answer naming it."""

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from snapledger.entrypoints.answers import Answer, MetricSink, answer_for_error, count, ok
from snapledger.entrypoints.payloads import ConsolePayload
from snapledger.errors import SnapledgerError, StoreUnavailableError
from snapledger.limits import MAX_PRODUCER_ID_CHARS, MAX_PRODUCER_OFFSETS
from snapledger.models.producer_offsets import (
    PRODUCER_ID_PATTERN,
    TTL_FIELD,
    BucketOffset,
    ProducerOffsets,
    check_one_per_bucket,
)
from snapledger.ports import ProducerOffsetsStore
from snapledger.services import producer_offsets

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

ProducerId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_PRODUCER_ID_CHARS,
        pattern=PRODUCER_ID_PATTERN,
        description="The producer (a job) id: letters, digits and . _ : - (at most 128)",
    ),
]
REGISTER_ACTION = "producer_offsets_register"
DELETE_ACTION = "producer_offsets_delete"


class RegisterProducerOffsets(ConsolePayload):
    """Register a producer's start offsets, one per table bucket: CREATED, or
    ALREADY_EXISTS with the live entry that stands."""

    action: Literal["producer_offsets_register"]
    producer_id: ProducerId
    offsets: list[BucketOffset] = Field(min_length=1, max_length=MAX_PRODUCER_OFFSETS)
    ttl_seconds: int = TTL_FIELD

    @model_validator(mode="after")
    def _one_offset_per_bucket(self) -> Self:
        check_one_per_bucket(tuple(self.offsets))
        return self


class DeleteProducerOffsets(ConsolePayload):
    """Delete a producer's entry (after its first checkpoint)."""

    action: Literal["producer_offsets_delete"]
    producer_id: ProducerId


def store_of(rt: "Runtime") -> ProducerOffsetsStore:
    if rt.producer_offsets is None:
        raise StoreUnavailableError(
            "this runtime has no producer-offsets registry: build it with build_runtime or "
            "snapledger.local"
        )
    return rt.producer_offsets


def entry_answer(entry: ProducerOffsets | None) -> dict[str, Any] | None:
    return None if entry is None else entry.model_dump(mode="json", exclude_none=True)


def answer_get(producer_id: str, rt: "Runtime") -> dict[str, Any]:
    """The query function's answer: the producer's live entry, if any."""
    entry = producer_offsets.get(store_of(rt), rt.clock, producer_id)
    return {"producer_id": producer_id, "found": entry is not None, "entry": entry_answer(entry)}


def answer_change(
    parsed: object,
    request: RegisterProducerOffsets | DeleteProducerOffsets,
    rt: "Runtime",
    metrics: MetricSink,
) -> Answer:
    """The launch function's answer to a registration or a deletion."""
    try:
        body = _change(request, rt)
    except SnapledgerError as exc:
        answer = answer_for_error(exc)
        if answer is None:
            raise
        count(metrics, "Launch_refused")
        return answer
    count(metrics, f"Launch_{request.action}")
    return ok(action=request.action, producer_id=request.producer_id, **body)


def _change(
    request: RegisterProducerOffsets | DeleteProducerOffsets, rt: "Runtime"
) -> dict[str, Any]:
    store = store_of(rt)
    if isinstance(request, DeleteProducerOffsets):
        return {"deleted": producer_offsets.delete(store, request.producer_id)}
    done = producer_offsets.register(
        store, rt.clock, request.producer_id, request.offsets, ttl_seconds=request.ttl_seconds
    )
    return {
        "result": done.result.value,
        "replaced_expired": done.replaced_expired,
        "entry": entry_answer(done.entry),
    }
