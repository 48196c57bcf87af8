"""What every event log on the ledger table shares: one transaction per command, the reads.

A log (a lineage's, a stream's) lives in one DynamoDB partition: a HEAD, the items it
projects, and ``EV#{seq:012d}`` events. A command's write is ONE ``TransactWriteItems``:

    HEAD, projected items   Put (or Delete) if version = :expected  (attribute_not_exists if new)
    EV#n                    Put if attribute_not_exists(sk)         (each new event, n gapless)

so two writers that read the same HEAD cannot both win, and an event sequence number
can never be written twice. Failures are translated: a failed condition is a lost race
(``LostRaceError``, with the command id of the event already there so the caller can
tell "someone else won" from "our own earlier attempt did"), a transaction conflict,
throttle or lost response is transient (``TransientStoreError``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_cursors as cursors
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.table_definition import PARTITION_KEY, SORT_KEY
from snapledger.errors import InvalidRequestError, LostRaceError, TransientStoreError
from snapledger.ports import MAX_PAGE, Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_TRANSACTION_ITEMS = 100
EventT = TypeVar("EventT")


class LedgerTableClient:
    """The ledger table (``client`` injectable for DynamoDB Local) and its TTL window.

    ``ttl_window``: how long terminal items (events, DELETED and REJECTED records, finished
    jobs) stay before DynamoDB's TTL removes them; None writes no TTL (they stay for ever).
    """

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient | None = None,
        *,
        ttl_window: timedelta | None = codec.DEFAULT_TTL_WINDOW,
    ) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")
        self.ttl_window = ttl_window


class DynamoLogTable(LedgerTableClient):
    """The ledger table as event logs use it: one transaction per command, the reads."""

    # --- writes -----------------------------------------------------------------------

    def _transact(self, items: list[dict[str, Any]], *, request_token: str, what: str) -> None:
        """Write ``items`` in one transaction; ``what`` names the log in errors.

        ``request_token`` is the ClientRequestToken: an SDK retry of a transaction that had
        in fact succeeded is answered as a success by DynamoDB instead of a failure.
        """
        if len(items) > MAX_TRANSACTION_ITEMS:
            raise InvalidRequestError(
                f"one command produced {len(items)} writes; DynamoDB allows "
                f"{MAX_TRANSACTION_ITEMS} per transaction"
            )
        # Tokens are account-wide: scope ours to this table.
        token = hashlib.sha256(f"{self.table_name}|{request_token}".encode()).hexdigest()[:32]
        try:
            writes.transact(self.client, items, what=what, token=token, table=self.table_name)
        except writes.PreconditionFailed as failed:
            raise LostRaceError(
                f"{what} changed since it was read",
                committed_command_id=_command_id_of_existing_event(failed.reasons, items),
            ) from failed

    def _put_if_version(self, item: dict[str, Any], expected: int | None) -> dict[str, Any]:
        """A transaction Put of ``item`` if the stored one is at ``expected`` (None: absent)."""
        return {"Put": writes.put(self.table_name, item, writes.expecting(expected))}

    def _delete_if_version(self, key: dict[str, Any], expected: int) -> dict[str, Any]:
        """A transaction Delete of the item at ``key`` if it is still at ``expected``."""
        return {"Delete": writes.delete(self.table_name, key, writes.AtVersion(expected))}

    def _check_version(self, key: dict[str, Any], expected: int) -> dict[str, Any]:
        """A transaction ConditionCheck: the item at ``key``, read but not written, is
        still at ``expected``."""
        return {"ConditionCheck": writes.check(self.table_name, key, writes.AtVersion(expected))}

    def _event_put(self, item: dict[str, Any]) -> dict[str, Any]:
        # A failed condition returns the event already there: whose was it?
        return {"Put": writes.put(self.table_name, item, writes.ABSENT, return_old=True)}

    # --- reads ------------------------------------------------------------------------

    def _get(self, pk: str, sk: str, *, consistent: bool) -> dict[str, Any] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table_name,
            Key=codec.key(pk, sk),
            ConsistentRead=consistent,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _query(
        self,
        pk: str,
        condition: str,
        values: dict[str, Any],
        *,
        limit: int,
        cursor: str | None,
        forward: bool,
        index: tuple[str, str] | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ``pk``'s items; ``index`` = (GSI, its sort key) queries that index."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidRequestError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
            "ExpressionAttributeValues": {":pk": {"S": pk}, **values},
            "Limit": limit,
            "ScanIndexForward": forward,
        }
        if "#sk" in condition:  # DynamoDB refuses a name the expression does not use
            request["ExpressionAttributeNames"]["#sk"] = index[1] if index else SORT_KEY
        if index:
            request["IndexName"] = index[0]
        scope = _cursor_scope(pk, values, forward=forward, index=index)
        if cursor:
            request["ExclusiveStartKey"] = cursors.decode_cursor(cursor, scope)
        response = self._call(self.client.query, **request)
        last = response.get("LastEvaluatedKey")
        next_cursor = cursors.encode_cursor(last, scope) if last else None
        return list(response.get("Items", [])), next_cursor

    def _events(
        self,
        pk: str,
        decode: Callable[[dict[str, Any]], EventT],
        *,
        known: frozenset[str],
        after_seq: int,
        limit: int,
        cursor: str | None,
    ) -> Page[EventT]:
        """The log's events in order, from ``after_seq + 1``, of the ``known`` types."""
        items, next_cursor = self._query(
            pk,
            "#pk = :pk AND #sk BETWEEN :lo AND :hi",
            {
                ":lo": {"S": codec.event_sk(after_seq + 1)},
                ":hi": {"S": codec.EVENT_PREFIX + "\uffff"},
            },
            limit=limit,
            cursor=cursor,
            forward=True,
        )
        # Readers skip event types a newer version added (docs/ledger.md: wire names).
        # A renamed type's items read as its current name (models/event_evolution.py).
        known_items = [i for i in items if codec.item_event_type(i) in known]
        return Page([decode(i) for i in known_items], next_cursor)

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        pending: dict[str, Any] = {self.table_name: {"Keys": keys, "ConsistentRead": True}}
        for _ in range(10):
            response = self._call(self.client.batch_get_item, RequestItems=pending)
            found += response.get("Responses", {}).get(self.table_name, [])
            pending = dict(response.get("UnprocessedKeys") or {})
            if not pending:
                return found
        raise TransientStoreError("DynamoDB kept throttling the read: retry later")

    def _call(self, operation: Any, **kwargs: Any) -> Any:
        return writes.read(operation, what="a read of the ledger", table=self.table_name, **kwargs)


def _cursor_scope(
    pk: str, values: dict[str, Any], *, forward: bool, index: tuple[str, str] | None
) -> cursors.CursorScope:
    """The query a ``_query`` cursor belongs to: its partition, its sort key's range (the
    ``:lo``/``:hi`` or ``:prefix`` of its condition), its index and direction."""
    sort = index[1] if index else SORT_KEY
    attributes = {PARTITION_KEY, SORT_KEY, sort}

    def bound(name: str) -> str | None:
        value = values.get(name)
        return None if value is None else str(value["S"])

    return cursors.CursorScope(
        attributes=frozenset(attributes),
        partition=(PARTITION_KEY, pk),
        sort=sort,
        low=bound(":lo"),
        high=bound(":hi"),
        prefix=bound(":prefix"),
        query=f"{index[0] if index else ''}|{'forward' if forward else 'backward'}",
    )


def _command_id_of_existing_event(reasons: list[Any], items: list[dict[str, Any]]) -> str | None:
    """The command id of an event that was already at the sequence we tried to write."""
    for reason, item in zip(reasons, items, strict=False):
        old = reason.get("Item")
        put = item.get("Put")
        is_event = put is not None and put["Item"][SORT_KEY]["S"].startswith(codec.EVENT_PREFIX)
        if old and is_event and "command_id" in old:
            return str(old["command_id"]["S"])
    return None
