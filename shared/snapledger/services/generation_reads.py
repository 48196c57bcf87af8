"""Reads of a stream's generations, as the query and launch functions answer them.

Apart from ``generations`` (which requests and completes them through the deciders), so
that a function that only reads them does not load the deciders.
"""

from __future__ import annotations

from datetime import datetime

from snapledger.errors import SOME_PARTITIONS, NotFoundError, Suggestion
from snapledger.layout import check_stream_name
from snapledger.models.generations import StreamGeneration
from snapledger.ports import StreamLogStore


def get_generation(streams: StreamLogStore, stream: str, generation: int) -> StreamGeneration:
    """One generation of ``stream``, or NotFoundError naming what exists."""
    check_stream_name(stream)
    found = streams.get_generation(stream, generation)
    if found is None:
        head = streams.get_head(stream)
        newest = head.generation if head else 0
        known = f"the newest is {newest}" if newest else "none was ever requested"
        raise NotFoundError(f"{stream} has no generation {generation} ({known})")
    return found


def current_generation(streams: StreamLogStore, stream: str) -> StreamGeneration:
    """The stream's newest generation (open or not), or NotFoundError."""
    check_stream_name(stream)
    head = streams.get_head(stream)
    if head is None or head.generation == 0:
        request = Suggestion(
            "launch", "snapshot_stream", {"stream": stream, "partitions": SOME_PARTITIONS}
        )
        raise NotFoundError(
            f"{stream} has no stream snapshot: request one with {request.text}",
            suggestion=request,
        )
    return get_generation(streams, stream, head.generation)


def describe(generation: StreamGeneration, now: datetime) -> dict[str, object]:
    """A generation as queries answer it."""
    return {
        "stream": generation.stream,
        "generation": generation.generation,
        "status": generation.status.value,
        "partitions": list(generation.partitions),
        "min_lsn": {str(p): lsn for p, lsn in generation.min_lsn.items()},
        "deadline": generation.deadline.isoformat(),
        "overdue": generation.overdue(now),
        "requested_at": generation.requested_at.isoformat(),
        "requested_by": generation.requested_by,
        "members": [m.model_dump(mode="json") for m in generation.member_list()],
        "missing": list(generation.missing),
        "completed_at": _iso(generation.completed_at),
        "failed_at": _iso(generation.failed_at),
        "failure_cause": generation.failure_cause and generation.failure_cause.value,
        "failure_reason": generation.failure_reason,
        "superseded_by": generation.superseded_by,
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()
