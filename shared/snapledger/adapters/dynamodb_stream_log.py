"""A stream's own log on DynamoDB: ``STREAM#{stream}`` holds its HEAD, events and POLICY.

| pk                  | sk                | what                                          |
|---------------------|-------------------|-----------------------------------------------|
| ``STREAM#{stream}`` | ``HEAD``          | ``StreamHead``: ``version`` = seq of the last event |
| ``STREAM#{stream}`` | ``EV#{seq:012d}`` | a stream event (``PolicySet``, ``PolicyReset``) |
| ``STREAM#{stream}`` | ``POLICY``        | the stream's retention policy (GC reads it)    |
| ``STREAM#{stream}`` | ``GEN#{g:012d}``  | ``StreamGeneration``: a stream snapshot by generation |

A command's write is ONE ``TransactWriteItems`` (``dynamodb_log.py``):

    HEAD     Put     if version = :expected   (attribute_not_exists for version 0)
    POLICY   Put     if version = :read       (attribute_not_exists when the stream had none)
             Delete  if version = :read       (a reset)
    GEN#g    Put     if version = :read       (attribute_not_exists for a new generation)
    EV#n     Put     if attribute_not_exists(sk)

A registration that counts for a generation writes the lineage's items and these in ONE
transaction (``commit_with_lineage``); one that names a generation but does not count
writes the lineage's items with a ConditionCheck that HEAD is still at the version it read
(absent for version 0).

The POLICY item keeps its own version condition: an item written before the stream's
log existed, with no HEAD, is still never overwritten unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.dynamodb_log import DynamoLogTable
from snapledger.adapters.table_definition import SORT_KEY
from snapledger.core.lineage import LineageState
from snapledger.core.stream import StreamState
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.generations import StreamGeneration
from snapledger.models.ledger import StreamHead
from snapledger.ports import LedgerStore, LogWrite, Page


class DynamoStreamLog(DynamoLogTable):
    """Streams' own logs on the ledger table (``client`` injectable for DynamoDB Local)."""

    def load(self, stream: str, generations: Sequence[int] = ()) -> StreamState:
        """HEAD, POLICY and the named ``GEN#`` items in one consistent BatchGetItem."""
        pk = codec.stream_pk(stream)
        keys = [codec.key(pk, codec.HEAD_SK), codec.key(pk, codec.POLICY_SK)]
        keys += [codec.key(pk, codec.generation_sk(g)) for g in dict.fromkeys(generations)]
        head, policy = StreamState.empty(stream).head, None
        loaded = {}
        for item in self._batch_get(keys):
            sk = item[SORT_KEY]["S"]
            if sk == codec.HEAD_SK:
                head = codec.stream_head_from_item(item)
            elif sk == codec.POLICY_SK:
                policy = codec.policy_from_item(item)
            else:
                generation = codec.generation_from_item(item)
                loaded[generation.generation] = generation
        return StreamState(head=head, policy=policy, generations=loaded)

    def commit(
        self,
        before: StreamState,
        events: Sequence[StreamEvent],
        after: StreamState,
        *,
        request_token: str,
    ) -> None:
        """Write ``after``'s HEAD, POLICY and generations and ``events`` in one transaction."""
        if not events:
            return
        what = f"the stream {before.head.stream}"
        items = self.commit_items(before, events, after)
        self._transact(items, request_token=request_token, what=what)

    def commit_with_lineage(
        self,
        ledger: LedgerStore,
        lineage: LogWrite[LineageState, LedgerEvent],
        stream: LogWrite[StreamState, StreamEvent],
        *,
        request_token: str,
    ) -> None:
        """Write a lineage's decision and this stream's in ONE transaction (a registration
        that counts for a generation): both are conditioned on the versions they read."""
        if not isinstance(ledger, DynamoLedger) or ledger.table_name != self.table_name:
            raise TypeError("a lineage and its stream commit together only on one table")
        items = ledger.commit_items(*lineage) + self.commit_items(*stream)
        what = f"the lineage {lineage[0].head.lineage} and its stream"
        self._transact(items, request_token=request_token, what=what)

    def commit_items(
        self, before: StreamState, events: Sequence[StreamEvent], after: StreamState
    ) -> list[dict[str, Any]]:
        """The transaction items of a decision on the stream's log."""
        if not events:
            # Nothing to write, but the lineage's decision read this HEAD (a registration
            # that names a generation and did not count): it must still be as read.
            head = codec.key(codec.stream_pk(before.head.stream), codec.HEAD_SK)
            as_read = writes.expecting(before.head.version or None)
            return [{"ConditionCheck": writes.check(self.table_name, head, as_read)}]
        items = [
            self._put_if_version(codec.stream_head_item(after.head), before.head.version or None)
        ]
        items += self._policy_writes(before, after)
        for number, generation in after.generations.items():
            old = before.generations.get(number)
            if old != generation:
                expected = None if old is None else old.version
                item = codec.generation_item(generation, self.ttl_window)
                items.append(self._put_if_version(item, expected))
        window = self.ttl_window
        items += [self._event_put(codec.stream_event_item(e, window)) for e in events]
        return items

    def get_generation(self, stream: str, generation: int) -> StreamGeneration | None:
        """One generation's record (consistent read), or None if never requested."""
        item = self._get(codec.stream_pk(stream), codec.generation_sk(generation), consistent=True)
        return codec.generation_from_item(item) if item else None

    def list_generations(
        self, stream: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[StreamGeneration]:
        """The stream's generations, newest first, one page at a time."""
        items, next_cursor = self._query(
            codec.stream_pk(stream),
            "#pk = :pk AND begins_with(#sk, :prefix)",
            {":prefix": {"S": codec.GENERATION_PREFIX}},
            limit=limit,
            cursor=cursor,
            forward=False,
        )
        return Page([codec.generation_from_item(i) for i in items], next_cursor)

    def _policy_writes(self, before: StreamState, after: StreamState) -> list[dict[str, Any]]:
        read = None if before.policy is None else before.policy.version
        if after.policy == before.policy:
            return []
        if after.policy is None:
            assert read is not None  # a change to "none" means there was one
            key = codec.key(codec.stream_pk(before.head.stream), codec.POLICY_SK)
            return [self._delete_if_version(key, read)]
        return [self._put_if_version(codec.policy_item(after.policy), read)]

    def get_head(self, stream: str) -> StreamHead | None:
        """The stream's HEAD (consistent), or None if its log is empty."""
        item = self._get(codec.stream_pk(stream), codec.HEAD_SK, consistent=True)
        return codec.stream_head_from_item(item) if item else None

    def get_event(self, stream: str, seq: int) -> StreamEvent | None:
        """One event of the stream's log (consistent read)."""
        item = self._get(codec.stream_pk(stream), codec.event_sk(seq), consistent=True)
        return codec.stream_event_from_item(item) if item else None

    def list_events(
        self, stream: str, *, after_seq: int = 0, limit: int = 100, cursor: str | None = None
    ) -> Page[StreamEvent]:
        """The stream's events in order, from ``after_seq + 1``, one page at a time."""
        pk = codec.stream_pk(stream)
        decode = codec.stream_event_from_item
        known = codec.KNOWN_STREAM_EVENT_TYPES
        return self._events(
            pk, decode, known=known, after_seq=after_seq, limit=limit, cursor=cursor
        )
