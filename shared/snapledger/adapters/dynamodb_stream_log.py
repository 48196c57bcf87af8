"""A stream's own log on DynamoDB: ``STREAM#{stream}`` holds its HEAD, events and POLICY.

| pk                  | sk                | what                                          |
|---------------------|-------------------|-----------------------------------------------|
| ``STREAM#{stream}`` | ``HEAD``          | ``StreamHead``: ``version`` = seq of the last event |
| ``STREAM#{stream}`` | ``EV#{seq:012d}`` | a stream event (``PolicySet``, ``PolicyReset``) |
| ``STREAM#{stream}`` | ``POLICY``        | the stream's retention policy (GC reads it)    |

A command's write is ONE ``TransactWriteItems`` (``dynamodb_log.py``):

    HEAD     Put     if version = :expected   (attribute_not_exists for version 0)
    POLICY   Put     if version = :read       (attribute_not_exists when the stream had none)
             Delete  if version = :read       (a reset)
    EV#n     Put     if attribute_not_exists(sk)

The POLICY item keeps its own version condition: an item written before the stream's
log existed, with no HEAD, is still never overwritten unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_log import DynamoLogTable
from snapledger.adapters.table_definition import SORT_KEY
from snapledger.core.stream import StreamState
from snapledger.models.events import StreamEvent
from snapledger.models.ledger import StreamHead
from snapledger.ports import Page


class DynamoStreamLog(DynamoLogTable):
    """Streams' own logs on the ledger table (``client`` injectable for DynamoDB Local)."""

    def load(self, stream: str) -> StreamState:
        """HEAD and POLICY in one consistent BatchGetItem."""
        pk = codec.stream_pk(stream)
        items = self._batch_get([codec.key(pk, codec.HEAD_SK), codec.key(pk, codec.POLICY_SK)])
        state = StreamState.empty(stream)
        for item in items:
            if item[SORT_KEY]["S"] == codec.HEAD_SK:
                state = StreamState(head=codec.stream_head_from_item(item), policy=state.policy)
            else:
                state = StreamState(head=state.head, policy=codec.policy_from_item(item))
        return state

    def commit(
        self,
        before: StreamState,
        events: Sequence[StreamEvent],
        after: StreamState,
        *,
        request_token: str,
    ) -> None:
        """Write ``after``'s HEAD and POLICY and ``events`` in one transaction."""
        if not events:
            return
        items = [
            self._put_if_version(codec.stream_head_item(after.head), before.head.version or None)
        ]
        items += self._policy_writes(before, after)
        window = self.ttl_window
        items += [self._event_put(codec.stream_event_item(e, window)) for e in events]
        what = f"the stream {before.head.stream}"
        self._transact(items, request_token=request_token, what=what)

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
