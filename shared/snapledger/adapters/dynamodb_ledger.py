"""The ledger on DynamoDB: one table, one partition per lineage (docs/ledger.md).

A command's write is ONE ``TransactWriteItems``:

    HEAD      Put  if  version = :expected          (or attribute_not_exists for version 0)
    SNAP#...  Put  if  version = :old  / attribute_not_exists(sk) for a new snapshot
    EV#n      Put  if  attribute_not_exists(sk)     (for each new event, n gapless)

so two writers that read the same HEAD cannot both win, and an event sequence number
can never be written twice. Failures are translated: a failed condition is a lost race
(``LostRaceError``, with the command id of the event already there so the caller can
tell "someone else won" from "our own earlier attempt did"), a transaction conflict,
throttle or lost response is transient (``TransientStoreError``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.table_definition import PARTITION_KEY, SORT_KEY
from snapledger.core.lineage import LineageState
from snapledger.errors import (
    InvalidRequestError,
    LostRaceError,
    StoreUnavailableError,
    TransientStoreError,
)
from snapledger.models.events import LedgerEvent
from snapledger.models.ledger import Head, LineageId, SnapshotRecord
from snapledger.ports import Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TRANSIENT_CODES = {
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
}
TRANSIENT_ERRORS = {
    "TransactionInProgressException",
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
}
_LOST_RESPONSE = (ReadTimeoutError, ConnectionClosedError, EndpointConnectionError)
MAX_PAGE = 1000


class DynamoLedger:
    """The ledger store on one DynamoDB table (``client`` injectable for DynamoDB Local)."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

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
        items = [self._head_put(before.head, after.head)]
        items += [
            self._snapshot_put(before.snapshots.get(sk), record)
            for sk, record in after.snapshots.items()
            if before.snapshots.get(sk) != record
        ]
        items += [self._event_put(event) for event in events]
        if len(items) > 100:
            raise InvalidRequestError(
                f"one command produced {len(items)} writes; DynamoDB allows 100 per transaction"
            )
        try:
            self.client.transact_write_items(
                TransactItems=items,  # type: ignore[arg-type]
                # Tokens are account-wide: scope ours to this table.
                ClientRequestToken=hashlib.sha256(
                    f"{self.table_name}|{request_token}".encode()
                ).hexdigest()[:32],
            )
        except ClientError as exc:
            raise self._translate_transaction_error(exc, items) from exc
        except _LOST_RESPONSE as exc:
            raise TransientStoreError(
                f"no answer from DynamoDB for the write to {before.head.lineage}: {exc}"
            ) from exc

    def _head_put(self, old: Head, new: Head) -> dict[str, Any]:
        put: dict[str, Any] = {"TableName": self.table_name, "Item": codec.head_item(new)}
        if old.version == 0:
            put["ConditionExpression"] = "attribute_not_exists(#sk)"
            put["ExpressionAttributeNames"] = {"#sk": SORT_KEY}
        else:
            put["ConditionExpression"] = "#version = :expected"
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = {":expected": {"N": str(old.version)}}
        return {"Put": put}

    def _snapshot_put(self, old: SnapshotRecord | None, new: SnapshotRecord) -> dict[str, Any]:
        put: dict[str, Any] = {"TableName": self.table_name, "Item": codec.snapshot_item(new)}
        if old is None:
            put["ConditionExpression"] = "attribute_not_exists(#sk)"
            put["ExpressionAttributeNames"] = {"#sk": SORT_KEY}
        else:
            put["ConditionExpression"] = "#version = :old"
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = {":old": {"N": str(old.version)}}
        return {"Put": put}

    def _event_put(self, event: LedgerEvent) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self.table_name,
                "Item": codec.event_item(event),
                "ConditionExpression": "attribute_not_exists(#sk)",
                "ExpressionAttributeNames": {"#sk": SORT_KEY},
                # A failed condition returns the event already there: whose was it?
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _translate_transaction_error(
        self, exc: ClientError, items: list[dict[str, Any]]
    ) -> Exception:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "TransactionCanceledException":
            reasons: list[Any] = list(exc.response.get("CancellationReasons", []))
            codes = [r.get("Code", "None") for r in reasons]
            if "ConditionalCheckFailed" in codes:
                return LostRaceError(
                    "the lineage changed since it was read",
                    committed_command_id=_command_id_of_existing_event(reasons, items),
                )
            if any(c in TRANSIENT_CODES for c in codes):
                return TransientStoreError(f"transaction cancelled ({', '.join(codes)}): retry")
            return StoreUnavailableError(
                f"DynamoDB cancelled the transaction ({', '.join(codes)}): {exc}"
            )
        if code in TRANSIENT_ERRORS:
            return TransientStoreError(f"DynamoDB is busy ({code}): retry later")
        if code == "IdempotentParameterMismatchException":
            return StoreUnavailableError(
                "a retried transaction differed from the first attempt; this is a bug: report it"
            )
        return StoreUnavailableError(f"DynamoDB refused the write ({code}): {exc}")

    def record_unplaceable_manifest(self, key: str, reason: str, at: datetime) -> bool:
        """Keep a manifest whose key names no lineage, so it is not silently dropped."""
        item = {
            **codec.key(codec.UNPLACEABLE_PK, codec.UNPLACEABLE_PREFIX + key),
            "manifest_key": {"S": key},
            "reason": {"S": reason},
            "at": {"S": at.isoformat()},
        }
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                # Precondition: first report only; a redelivery leaves the first record.
                ConditionExpression="attribute_not_exists(#sk)",
                ExpressionAttributeNames={"#sk": SORT_KEY},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise StoreUnavailableError(f"could not record the rejected manifest: {exc}") from exc
        return True

    # --- reads ------------------------------------------------------------------------

    def get_head(self, lineage: LineageId, *, consistent: bool = False) -> Head | None:
        """The lineage's HEAD in one GetItem, or None if the lineage has no history."""
        response = self._call(
            self.client.get_item,
            TableName=self.table_name,
            Key=codec.key(codec.lineage_pk(lineage), codec.HEAD_SK),
            ConsistentRead=consistent,
        )
        item = response.get("Item")
        return codec.head_from_item(item) if item else None

    def get_snapshot(self, lineage: LineageId, sort_key: str) -> SnapshotRecord | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table_name,
            Key=codec.key(codec.lineage_pk(lineage), sort_key),
        )
        item = response.get("Item")
        return codec.snapshot_from_item(item) if item else None

    def get_event(self, lineage: LineageId, seq: int) -> LedgerEvent | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table_name,
            Key=codec.key(codec.lineage_pk(lineage), codec.event_sk(seq)),
            ConsistentRead=True,
        )
        item = response.get("Item")
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
            lineage,
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
        items, next_cursor = self._query(
            lineage,
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
        known = [i for i in items if i.get("type", {}).get("S") in codec.KNOWN_EVENT_TYPES]
        return Page([codec.event_from_item(i) for i in known], next_cursor)

    def _query(
        self,
        lineage: LineageId,
        condition: str,
        values: dict[str, Any],
        *,
        limit: int,
        cursor: str | None,
        forward: bool,
    ) -> tuple[list[dict[str, Any]], str | None]:
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidRequestError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": codec.lineage_pk(lineage)}, **values},
            "Limit": limit,
            "ScanIndexForward": forward,
        }
        if cursor:
            request["ExclusiveStartKey"] = codec.decode_cursor(cursor)
        response = self._call(self.client.query, **request)
        last = response.get("LastEvaluatedKey")
        return list(response.get("Items", [])), codec.encode_cursor(last) if last else None

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
        try:
            return operation(**kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                raise StoreUnavailableError(
                    f"the ledger table {self.table_name!r} does not exist: deploy the stack or "
                    "check SNAPLEDGER_TABLE"
                ) from exc
            if code in TRANSIENT_ERRORS:
                raise TransientStoreError(f"DynamoDB is busy ({code}): retry later") from exc
            raise StoreUnavailableError(f"DynamoDB refused the request ({code}): {exc}") from exc
        except _LOST_RESPONSE as exc:
            raise TransientStoreError(f"no answer from DynamoDB: {exc}") from exc


def _command_id_of_existing_event(reasons: list[Any], items: list[dict[str, Any]]) -> str | None:
    """The command id of an event that was already at the sequence we tried to write."""
    for reason, item in zip(reasons, items, strict=False):
        old = reason.get("Item")
        sk = item["Put"]["Item"][SORT_KEY]["S"]
        if old and sk.startswith(codec.EVENT_PREFIX) and "command_id" in old:
            return str(old["command_id"]["S"])
    return None
