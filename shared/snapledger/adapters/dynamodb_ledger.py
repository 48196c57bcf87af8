"""The ledger on DynamoDB: one table, one partition per lineage (docs/ledger.md).

A command's write is ONE ``TransactWriteItems`` (``dynamodb_log.py``):

    HEAD      Put  if  version = :expected          (or attribute_not_exists for version 0)
    SNAP#...  Put  if  version = :old  / attribute_not_exists(sk) for a new snapshot
    SNAP#...  ConditionCheck  version = :read   (GC: each snapshot read and left unchanged)
    EV#n      Put  if  attribute_not_exists(sk)     (for each new event, n gapless)

A SNAP item carries its own index keys (``codec.snapshot_lookup_keys``), so the lookups by
id and as of an LSN or a time are one Query of a sparse GSI each, and the transaction
holds no extra item for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.dynamodb_log import DynamoLogTable
from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    KIND_INDEX,
    PARTITION_KEY,
    REGISTERED_INDEX,
    REGISTERED_SK_ATTRIBUTE,
    SORT_KEY,
)
from snapledger.core.lineage import LineageState
from snapledger.models.events import LedgerEvent
from snapledger.models.ledger import Head, LineageId, SnapshotRecord
from snapledger.ports import MAX_PAGE, Page

__all__ = ["MAX_PAGE", "DynamoLedger"]


class DynamoLedger(DynamoLogTable):
    """The lineages' ledger on one DynamoDB table (``client`` injectable for DynamoDB Local)."""

    # --- the command path: load, then commit -------------------------------------------

    def load(self, lineage: LineageId, snapshot_keys: Sequence[str] = ()) -> LineageState:
        """HEAD and the named SNAP items in one consistent BatchGetItem."""
        pk = codec.lineage_pk(lineage)
        keys = [codec.key(pk, codec.HEAD_SK), *(codec.key(pk, sk) for sk in snapshot_keys)]
        items = self._batch_get(keys)
        head = Head(stream=lineage.stream, partition=lineage.partition)
        snapshots: dict[str, SnapshotRecord] = {}
        for item in items:
            sk = item[SORT_KEY]["S"]
            if sk == codec.HEAD_SK:
                head = codec.head_from_item(item)
            else:
                snapshots[sk] = codec.snapshot_from_item(item)
        return LineageState(head=head, snapshots=snapshots)

    def commit(
        self,
        before: LineageState,
        events: Sequence[LedgerEvent],
        after: LineageState,
        *,
        request_token: str,
    ) -> None:
        """Write ``after``'s HEAD, changed snapshots and ``events`` in one transaction.

        ``request_token`` is the ClientRequestToken: an SDK retry of a transaction that had
        in fact succeeded is answered as a success by DynamoDB instead of a failure.
        """
        if not events:
            return
        what = f"the lineage {before.head.lineage}"
        self._transact(
            self.commit_items(before, events, after), request_token=request_token, what=what
        )

    def commit_items(
        self, before: LineageState, events: Sequence[LedgerEvent], after: LineageState
    ) -> list[dict[str, Any]]:
        """The transaction items of a decision on the lineage's log."""
        old_head = before.head.version
        items = [self._put_if_version(codec.head_item(after.head), old_head or None)]
        for sk, record in after.snapshots.items():
            old = before.snapshots.get(sk)
            if old != record:
                expected = None if old is None else old.version
                item = codec.snapshot_item(record, self.ttl_window)
                items.append(self._put_if_version(item, expected))
        # Where asked, every item the decision read and left as it was is checked too: a
        # decision made on a stale read (a seed, an index page) fails here instead.
        pk = codec.lineage_pk(before.head.lineage)
        items += [
            self._check_version(codec.key(pk, sk), record.version)
            for sk, record in before.snapshots.items()
            if before.check_unchanged and after.snapshots.get(sk) == record
        ]
        items += [self._event_put(codec.event_item(e, self.ttl_window)) for e in events]
        return items

    def record_unplaceable_manifest(self, key: str, reason: str, at: datetime) -> bool:
        """Keep a manifest whose key names no lineage, so it is not silently dropped: once,
        under a bounded sort key (``codec.unplaceable_sk``: a key too long for one is
        hashed), the whole key in ``manifest_key``."""
        item = {
            **codec.key(codec.UNPLACEABLE_PK, codec.unplaceable_sk(key)),
            "manifest_key": {"S": key},
            "reason": {"S": reason},
            "at": {"S": at.isoformat()},
        }
        # Precondition: first report only; a redelivery leaves the first record.
        request = writes.put(self.table_name, item, writes.ABSENT)
        try:
            writes.write(self.client, "put_item", request, what=f"the rejected manifest {key}")
        except writes.PreconditionFailed:
            return False
        return True

    # --- reads ------------------------------------------------------------------------

    def get_head(self, lineage: LineageId, *, consistent: bool = False) -> Head | None:
        """The lineage's HEAD in one GetItem, or None if the lineage has no history."""
        item = self._get(codec.lineage_pk(lineage), codec.HEAD_SK, consistent=consistent)
        return codec.head_from_item(item) if item else None

    def get_snapshot(self, lineage: LineageId, sort_key: str) -> SnapshotRecord | None:
        item = self._get(codec.lineage_pk(lineage), sort_key, consistent=False)
        return codec.snapshot_from_item(item) if item else None

    def find_snapshot(self, lineage: LineageId, snapshot_id: str) -> SnapshotRecord | None:
        """The snapshot with this id, whatever its status: one Query of ``by_kind``.

        A lineage could hold the id at two LSNs (two manifests naming it); the highest
        LSN answers, as a newest-first listing would.
        """
        response = self._call(
            self.client.query,
            TableName=self.table_name,
            IndexName=KIND_INDEX,
            KeyConditionExpression="#kind = :kind AND #pk = :pk",
            ExpressionAttributeNames={"#kind": KIND_ATTRIBUTE, "#pk": PARTITION_KEY},
            ExpressionAttributeValues={
                ":kind": {"S": codec.snapshot_kind(snapshot_id)},
                ":pk": {"S": codec.lineage_pk(lineage)},
            },
        )
        records = [codec.snapshot_from_item(item) for item in response.get("Items", [])]
        return max(records, key=lambda record: record.sort_key, default=None)

    def list_registered(
        self,
        lineage: LineageId,
        *,
        max_sort_key: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[SnapshotRecord]:
        """REGISTERED snapshots only, highest LSN first, through the ``registered`` index."""
        items, next_cursor = self._query(
            codec.lineage_pk(lineage),
            "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            {
                ":lo": {"S": codec.SNAP_PREFIX},
                ":hi": {"S": max_sort_key or codec.SNAP_PREFIX + "\uffff"},
            },
            limit=limit,
            cursor=cursor,
            forward=False,
            index=(REGISTERED_INDEX, REGISTERED_SK_ATTRIBUTE),
        )
        return Page([codec.snapshot_from_item(i) for i in items], next_cursor)

    def list_live(
        self, lineage: LineageId, *, limit: int = MAX_PAGE, cursor: str | None = None
    ) -> Page[SnapshotRecord]:
        """The records GC has work or a promise for (REGISTERED, EXPIRING, REJECTED), in
        no particular order: one Query of the lineage's partition of ``registered``. DELETED
        records are not in it, so this reads what is live, never the lineage's history."""
        items, next_cursor = self._query(
            codec.lineage_pk(lineage),
            "#pk = :pk",
            {},
            limit=limit,
            cursor=cursor,
            forward=True,
            index=(REGISTERED_INDEX, REGISTERED_SK_ATTRIBUTE),
        )
        return Page([codec.snapshot_from_item(i) for i in items], next_cursor)

    def get_event(self, lineage: LineageId, seq: int) -> LedgerEvent | None:
        item = self._get(codec.lineage_pk(lineage), codec.event_sk(seq), consistent=True)
        return codec.event_from_item(item) if item else None

    def list_snapshots(
        self,
        lineage: LineageId,
        *,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = True,
        max_sort_key: str | None = None,
    ) -> Page[SnapshotRecord]:
        """Snapshots by LSN (newest first by default), one page at a time."""
        upper = max_sort_key or codec.SNAP_PREFIX + "\uffff"
        items, next_cursor = self._query(
            codec.lineage_pk(lineage),
            "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            {":lo": {"S": codec.SNAP_PREFIX}, ":hi": {"S": upper}},
            limit=limit,
            cursor=cursor,
            forward=not newest_first,
        )
        return Page([codec.snapshot_from_item(i) for i in items], next_cursor)

    def list_events(
        self, lineage: LineageId, *, after_seq: int = 0, limit: int = 100, cursor: str | None = None
    ) -> Page[LedgerEvent]:
        """The lineage's events in order, from ``after_seq + 1``, one page at a time."""
        pk = codec.lineage_pk(lineage)
        return self._events(
            pk,
            codec.event_from_item,
            known=codec.KNOWN_EVENT_TYPES,
            after_seq=after_seq,
            limit=limit,
            cursor=cursor,
        )
