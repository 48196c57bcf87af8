"""GC past one invocation: the scheduled run sends the lineages out in shards.

The coordinator (the scheduled run, ``run_gc``) pages lineage HEADs as always. When a
shard queue is configured and the run covers more than ``gc_fan_out_above_lineages``
lineages, it does not work them itself: it sends them ``gc_shard_size`` to a message,
ten messages per ``SendMessageBatch`` (``dispatch``), and the gc function's SQS trigger
works each shard (``run_gc_shard``): the same lineage pass, with the same budget checks,
over the shard's lineages. Stuck jobs and the lineages that exist only in the object
store stay with the coordinator.

Nothing here needs exactly-once delivery: a shard delivered twice, or two workers on
overlapping lineages, pass through the same conditional transactions as two overlapping
runs (``tests/gc/test_concurrency.py``, ``tests/gc/test_fanout.py``).
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from snapledger.errors import SnapledgerError
from snapledger.layout import STREAM_PATTERN
from snapledger.models.base import Frozen
from snapledger.models.ledger import Head, LineageId
from snapledger.ports import Ledger, ShardQueue
from snapledger.services.gc_deps import Budget

#: SQS takes at most ten messages per SendMessageBatch.
MAX_MESSAGES_PER_REQUEST = 10
MAX_SHARD_SIZE = 500  # 500 lineages of the longest names stay far under SQS's 256 KiB
SHARD_KIND = "snapledger.gc-shard"


class ShardLineage(Frozen):
    stream: str = Field(pattern=f"^{STREAM_PATTERN}$")
    partition: int = Field(ge=0)


class GcShard(Frozen):
    """One message: the lineages a worker runs GC over, and the run that sent them."""

    kind: Literal["snapledger.gc-shard"] = "snapledger.gc-shard"
    run_id: str = Field(min_length=1, max_length=64)
    lineages: tuple[ShardLineage, ...] = Field(min_length=1, max_length=MAX_SHARD_SIZE)

    def lineage_ids(self) -> list[LineageId]:
        return [LineageId(stream=x.stream, partition=x.partition) for x in self.lineages]


@dataclass
class Dispatched:
    finished: bool  # every lineage was sent
    last_sent: LineageId | None  # every lineage up to this one is in a sent shard
    shards: int = 0  # sent, up to the first one refused
    lineages: int = 0
    errors: list[str] = field(default_factory=list)


def dispatch(
    heads: Iterator[Head],
    queue: ShardQueue,
    *,
    run_id: str,
    shard_size: int,
    budget: Budget,
    start: LineageId | None = None,
) -> Dispatched:
    """Send every lineage ``heads`` yields, in shards of ``shard_size``, ten to a request.

    The budget is checked before each request. A message SQS refuses is retried once in
    the next request; refused again, dispatch stops there (the next run resumes after
    the last lineage of the shards before it).
    """
    result = Dispatched(finished=False, last_sent=start)
    pending: list[list[LineageId]] = []
    shard: list[LineageId] = []
    exhausted = False
    while not exhausted or pending or shard:
        head = None if exhausted else next(heads, None)
        if head is None:
            exhausted = True
        else:
            shard.append(head.lineage)
        if shard and (len(shard) >= shard_size or exhausted):
            pending.append(shard)
            shard = []
        if pending and (len(pending) >= MAX_MESSAGES_PER_REQUEST or exhausted):
            if budget.exhausted():
                return result
            if not _send(queue, pending, run_id, result):
                return result
            pending = []
    result.finished = True
    return result


def _send(
    queue: ShardQueue, shards: list[list[LineageId]], run_id: str, result: Dispatched
) -> bool:
    """Send ``shards`` in order (one retry of refused ones); True if all went."""
    bodies = [_body(run_id, lineages) for lineages in shards]
    try:
        refused = queue.send(bodies)
        if refused:
            again = queue.send([bodies[i] for i in refused])
            refused = [refused[i] for i in again]
    except SnapledgerError as exc:
        result.errors.append(f"sending GC shards: {exc}")
        return False
    first_refused = min(refused, default=len(shards))
    for lineages in shards[:first_refused]:
        result.shards += 1
        result.lineages += len(lineages)
        result.last_sent = lineages[-1]
    if refused:
        result.errors.append(
            f"{len(refused)} GC shard(s) refused twice by the queue; the next run sends them "
            "again: check the queue and the function's sqs:SendMessage grant"
        )
        return False
    return True


def _body(run_id: str, lineages: list[LineageId]) -> str:
    shard = GcShard(
        run_id=run_id,
        lineages=tuple(ShardLineage(stream=x.stream, partition=x.partition) for x in lineages),
    )
    return shard.model_dump_json()


def shard_heads(ledger: Ledger, shard: GcShard) -> Iterator[Head]:
    """The shard's lineages' HEADs, read as each is taken (a lineage with none is skipped)."""
    for lineage in shard.lineage_ids():
        head = ledger.get_head(lineage, consistent=True)
        if head is not None:
            yield head
