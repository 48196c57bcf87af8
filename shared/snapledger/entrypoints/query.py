"""The query function's actions: one payload model and one answering function each.

To add an action, declare its model (a ``QueryPayload`` whose ``action`` is a one-value
``Literal``) and decorate the function that answers it with ``@query_action(Model)``,
in this module (so that importing it registers every action). Parsing, the list of
actions in validation answers, the error answers and the metrics follow from that.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from pydantic import AwareDatetime, Field, model_validator

from snapledger.entrypoints.actions import ActionTable
from snapledger.entrypoints.answers import (
    Answer,
    Intake,
    MetricSink,
    answer_for_error,
    as_object,
    count,
    ok,
)
from snapledger.entrypoints.payloads import ConsolePayload, LineagePayload, SnapshotId
from snapledger.entrypoints.producer_offsets import ProducerId, answer_get
from snapledger.errors import NotFoundError, SnapledgerError, Suggestion
from snapledger.layout import STREAM_PATTERN
from snapledger.limits import MAX_COUNT, MAX_LSN, MAX_PARTITION
from snapledger.models.base import one_of_error
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.ledger import LineageId
from snapledger.ports import MAX_PAGE, Page
from snapledger.services import generation_reads, queries

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

SUBJECT = "query"
INVALID_METRIC = "Query_invalid"

QueryT = TypeVar("QueryT", bound="QueryPayload")
AnswerFn = Callable[[QueryT, "Runtime"], dict[str, Any]]


class QueryPayload(ConsolePayload):
    """A console query; subclasses narrow ``action`` to their one name."""

    action: str


class LineageQuery(QueryPayload, LineagePayload):
    """A query about one lineage (``stream`` + ``partition``)."""


class LatestQuery(LineageQuery):
    """``{"action": "latest", "stream": "orders", "partition": 3}``: the lineage's HEAD."""

    action: Literal["latest"]


class ListQuery(LineageQuery):
    """The lineage's snapshots, newest first, a page at a time."""

    action: Literal["list"]
    limit: int = Field(default=100, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1, description="From the last answer")


class HistoryQuery(QueryPayload):
    """A log's events in order, after ``after_seq``, a page at a time: the lineage's, or
    with no ``partition`` the stream's own (its policy changes)."""

    action: Literal["history"]
    stream: str = Field(pattern=f"^{STREAM_PATTERN}$", description="Stream name, e.g. orders")
    partition: int | None = Field(
        default=None,
        ge=0,
        le=MAX_PARTITION,
        description="Omit it for the stream's own log (policy changes)",
    )
    after_seq: int = Field(default=0, ge=0, le=MAX_COUNT)
    limit: int = Field(default=100, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1, description="From the last answer")


class AsOfQuery(LineageQuery):
    """The snapshot to restore from as of an LSN, or as of a (registry) time."""

    action: Literal["as_of"]
    lsn: int | None = Field(default=None, ge=0, le=MAX_LSN)
    as_of_time: AwareDatetime | None = Field(
        default=None, strict=False, description="ISO-8601 with a timezone, e.g. ...Z"
    )

    @model_validator(mode="after")
    def _exactly_one_point(self) -> Self:
        if (self.lsn is None) == (self.as_of_time is None):
            raise one_of_error(
                ("lsn", "as_of_time"),
                "give exactly one of lsn (an LSN) or as_of_time (ISO-8601 with a timezone)",
            )
        return self


class SnapshotQuery(LineageQuery):
    """One snapshot by id, whatever its status."""

    action: Literal["snapshot"]
    snapshot_id: SnapshotId


class JobQuery(QueryPayload):
    """``{"action": "job", "job_id": "restore-…"}``: one job, with its transitions."""

    action: Literal["job"]
    job_id: str = Field(min_length=1, max_length=128)


class JobsQuery(QueryPayload):
    """Every job (newest state of each), a page at a time."""

    action: Literal["jobs"]
    limit: int = Field(default=100, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1, description="From the last answer")


#: Each action's model and answer; filled by ``@query_action`` below.
_ACTIONS: ActionTable[AnswerFn[Any]] = ActionTable(SUBJECT)


def query_action(model: type[QueryT]) -> Callable[[AnswerFn[QueryT]], AnswerFn[QueryT]]:
    """Register the decorated function as the answer to ``model``'s action."""
    return _ACTIONS.action(model)


def actions() -> list[str]:
    """The action names, sorted."""
    return _ACTIONS.names()


def parse_query(event: object) -> QueryPayload:
    """The query ``event`` asks; a ValidationError naming the fields if it is malformed."""
    request: QueryPayload = _ACTIONS.parse(as_object(event, SUBJECT))
    return request


QUERY_INTAKE = Intake(parse_query, SUBJECT, INVALID_METRIC)


def answer_query(request: QueryPayload, rt: "Runtime", metrics: MetricSink) -> Answer:
    """Answer ``request``; NotFound and InvalidRequest errors are answers, others raise."""
    answer = _ACTIONS.answer_for(request)
    try:
        body = answer(request, rt)
    except SnapledgerError as exc:
        refused = answer_for_error(exc)
        if refused is None:
            raise
        count(metrics, f"Query_{refused['error']}")
        return refused
    count(metrics, f"Query_{request.action}")
    return ok(action=request.action, **body)


# --- the actions ----------------------------------------------------------------------


@query_action(LatestQuery)
def answer_latest(request: LatestQuery, rt: "Runtime") -> dict[str, Any]:
    head = queries.latest(rt.ledger, request.lineage)
    return {"head": head.model_dump(mode="json")}


@query_action(ListQuery)
def answer_list(request: ListQuery, rt: "Runtime") -> dict[str, Any]:
    page = queries.list_snapshots(
        rt.ledger, request.lineage, limit=request.limit, cursor=request.cursor
    )
    return {"snapshots": [s.model_dump(mode="json") for s in page.items], "cursor": page.cursor}


@query_action(HistoryQuery)
def answer_history(request: HistoryQuery, rt: "Runtime") -> dict[str, Any]:
    after, limit, cursor = request.after_seq, request.limit, request.cursor
    page: Page[LedgerEvent] | Page[StreamEvent]
    if request.partition is None:
        page = queries.stream_history(
            rt.streams, request.stream, after_seq=after, limit=limit, cursor=cursor
        )
    else:
        lineage = LineageId(stream=request.stream, partition=request.partition)
        page = queries.history(rt.ledger, lineage, after_seq=after, limit=limit, cursor=cursor)
    answer: dict[str, Any] = {
        "events": [e.model_dump(mode="json") for e in page.items],
        "cursor": page.cursor,
    }
    if cursor is None:  # a first page: does it start where asked?
        through = queries.expired_through(
            page, after_seq=after, last_seq=lambda: _last_seq(request, rt)
        )
        if through is not None:
            answer["expired"] = _expired_answer(through, answer["events"], rt)
    return answer


def _last_seq(request: HistoryQuery, rt: "Runtime") -> int:
    if request.partition is None:
        stream_head = rt.streams.get_head(request.stream)
        return 0 if stream_head is None else stream_head.version
    head = rt.ledger.get_head(LineageId(stream=request.stream, partition=request.partition))
    return 0 if head is None else head.version


def _expired_answer(through: int, events: list[dict[str, Any]], rt: "Runtime") -> dict[str, Any]:
    """Where the events the table no longer holds are, and how to replay them."""
    archive = rt.event_archive
    until = events[0]["at"] if events else "<now>"
    answer: dict[str, Any] = {
        "through_seq": through,
        "why": (
            f"events up to seq {through} are older than the ledger's TTL window and have "
            "left the table; the event bus's archive keeps them"
        ),
    }
    if archive is None:
        answer["archive"] = None
        answer["replay"] = "this deployment has no event archive configured"
        return answer
    answer["archive"] = archive.archive_arn
    answer["replay"] = (
        f"aws events start-replay --replay-name <a name> --event-source-arn "
        f"{archive.archive_arn} --event-start-time <when the stream began> "
        f"--event-end-time {until} --destination "
        f"'Arn={archive.bus_arn},FilterArns=[<your rule's ARN>]'"
    )
    return answer


@query_action(AsOfQuery)
def answer_as_of(request: AsOfQuery, rt: "Runtime") -> dict[str, Any]:
    if request.as_of_time is not None:
        record = queries.as_of_time(rt.ledger, request.lineage, request.as_of_time)
    else:
        assert request.lsn is not None  # the model guarantees exactly one of the two
        record = queries.as_of_lsn(rt.ledger, request.lineage, request.lsn)
    return {"snapshot": record.model_dump(mode="json")}


@query_action(SnapshotQuery)
def answer_snapshot(request: SnapshotQuery, rt: "Runtime") -> dict[str, Any]:
    record = queries.by_id(rt.ledger, request.lineage, request.snapshot_id)
    return {"snapshot": record.model_dump(mode="json")}


@query_action(JobQuery)
def answer_job(request: JobQuery, rt: "Runtime") -> dict[str, Any]:
    job = rt.jobs.get(request.job_id)
    if job is None:
        jobs = Suggestion("query", "jobs")
        raise NotFoundError(
            f"there is no job {request.job_id}: list jobs with {jobs.text}", suggestion=jobs
        )
    return {"job": job.model_dump(mode="json")}


@query_action(JobsQuery)
def answer_jobs(request: JobsQuery, rt: "Runtime") -> dict[str, Any]:
    page = rt.jobs.list_jobs(limit=request.limit, cursor=request.cursor)
    return {"jobs": [j.model_dump(mode="json") for j in page.items], "cursor": page.cursor}


class GenerationQuery(QueryPayload):
    """``{"action": "generation", "stream": "orders", "generation": 4}``: one stream
    snapshot with its members; without ``generation``, the stream's newest (current)."""

    action: Literal["generation"]
    stream: str = Field(pattern=f"^{STREAM_PATTERN}$", description="Stream name, e.g. orders")
    generation: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="Omit it for the newest"
    )


class GenerationsQuery(QueryPayload):
    """The stream's snapshots by generation, newest first, a page at a time."""

    action: Literal["generations"]
    stream: str = Field(pattern=f"^{STREAM_PATTERN}$", description="Stream name, e.g. orders")
    limit: int = Field(default=20, ge=1, le=MAX_PAGE)
    cursor: str | None = Field(default=None, min_length=1, description="From the last answer")


@query_action(GenerationQuery)
def answer_generation(request: GenerationQuery, rt: "Runtime") -> dict[str, Any]:
    if request.generation is None:
        found = generation_reads.current_generation(rt.streams, request.stream)
    else:
        found = generation_reads.get_generation(rt.streams, request.stream, request.generation)
    return {"generation": generation_reads.describe(found, rt.clock.now())}


@query_action(GenerationsQuery)
def answer_generations(request: GenerationsQuery, rt: "Runtime") -> dict[str, Any]:
    page = rt.streams.list_generations(request.stream, limit=request.limit, cursor=request.cursor)
    now = rt.clock.now()
    return {
        "generations": [generation_reads.describe(g, now) for g in page.items],
        "cursor": page.cursor,
    }


class ProducerOffsetsQuery(QueryPayload):
    """``{"action": "producer_offsets", "producer_id": "job-1"}``: the producer's live
    registered offsets, if any (entrypoints/producer_offsets.py; docs/fluss.md)."""

    action: Literal["producer_offsets"]
    producer_id: ProducerId


@query_action(ProducerOffsetsQuery)
def answer_producer_offsets(request: ProducerOffsetsQuery, rt: "Runtime") -> dict[str, Any]:
    return answer_get(request.producer_id, rt)
