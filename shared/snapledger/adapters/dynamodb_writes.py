"""Conditional writes to the ledger table, and the one translation of DynamoDB's errors.

Every write states its precondition as a value:

- ``ABSENT``: the item does not exist yet (``attribute_not_exists(sk)``);
- ``AtVersion(n)``: the stored item's ``version`` is ``n`` (what the writer read);
- ``Matches(expression, names, values)``: any other condition, spelled out (rare: the
  backfill's "version and status as read").

and every request's failure means one thing everywhere (``translate``):

- a failed condition (``ConditionalCheckFailedException``, or a cancelled transaction
  with a ``ConditionalCheckFailed`` reason): ``PreconditionFailed``, and the caller
  decides what it means (a lost race, a duplicate);
- throttling, a transaction conflict or one in progress, a 5xx, no answer at all:
  ``TransientStoreError`` (retry later);
- the table does not exist: ``StoreUnavailableError`` naming the table and the setting;
- anything else: ``StoreUnavailableError`` naming DynamoDB's code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from snapledger.adapters.table_definition import SORT_KEY
from snapledger.errors import StoreUnavailableError, TransientStoreError

Item = dict[str, Any]

#: Error codes of a failed request that a later retry may not meet.
TRANSIENT_ERRORS: Final = frozenset(
    {
        "TransactionInProgressException",
        "TransactionConflictException",
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
#: Cancellation reasons of a transaction item that a later retry may not meet.
TRANSIENT_REASONS: Final = frozenset(
    {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
    }
)
#: No answer: the write may or may not have happened (a retry with the same token, or a
#: read, tells).
LOST_RESPONSE: Final = (ReadTimeoutError, ConnectionClosedError, EndpointConnectionError)


@dataclass(frozen=True, slots=True)
class Absent:
    """The item must not exist yet."""


@dataclass(frozen=True, slots=True)
class AtVersion:
    """The stored item's ``version`` must be ``version`` (the one the writer read)."""

    version: int


@dataclass(frozen=True, slots=True)
class Matches:
    """Any other condition, with its own names and values."""

    expression: str
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)


ABSENT: Final = Absent()
Precondition = Absent | AtVersion | Matches


def expecting(version: int | None) -> Precondition:
    """The item as read: at ``version``, or absent when it was not there (None)."""
    return ABSENT if version is None else AtVersion(version)


def condition(precondition: Precondition) -> Item:
    """The request arguments that state ``precondition``."""
    if isinstance(precondition, Absent):
        return {
            "ConditionExpression": "attribute_not_exists(#sk)",
            "ExpressionAttributeNames": {"#sk": SORT_KEY},
        }
    if isinstance(precondition, AtVersion):
        return {
            "ConditionExpression": "#version = :expected",
            "ExpressionAttributeNames": {"#version": "version"},
            "ExpressionAttributeValues": {":expected": {"N": str(precondition.version)}},
        }
    arguments: Item = {"ConditionExpression": precondition.expression}
    if precondition.names:
        arguments["ExpressionAttributeNames"] = dict(precondition.names)
    if precondition.values:
        arguments["ExpressionAttributeValues"] = dict(precondition.values)
    return arguments


class PreconditionFailed(Exception):  # noqa: N818 - a condition's outcome, not a fault
    """The write's precondition did not hold: nothing was written.

    ``existing`` is the stored item when the request asked for it (a single write's
    ``ReturnValuesOnConditionCheckFailure``); ``reasons`` are a transaction's cancellation
    reasons, one per item, in order (each may hold the stored ``Item``).
    """

    def __init__(self, what: str, *, existing: Item | None, reasons: list[Item]) -> None:
        super().__init__(f"{what} changed since it was read")
        self.existing = existing
        self.reasons = reasons


def put(table: str, item: Item, precondition: Precondition, *, return_old: bool = False) -> Item:
    """A Put of ``item`` if ``precondition`` holds: the request, for ``write`` or a transaction."""
    request = {"TableName": table, "Item": item, **condition(precondition)}
    if return_old:
        request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return request


def delete(table: str, key: Item, precondition: Precondition) -> Item:
    """A Delete of the item at ``key`` if ``precondition`` holds."""
    return {"TableName": table, "Key": key, **condition(precondition)}


def check(table: str, key: Item, precondition: Precondition) -> Item:
    """A transaction ConditionCheck: the item at ``key`` is as read (written or not)."""
    return {"TableName": table, "Key": key, **condition(precondition)}


def write(
    client: Any, operation: str, request: Item, *, what: str, table: str | None = None
) -> None:
    """One conditional ``put_item`` / ``update_item`` / ``delete_item``.

    Raises ``PreconditionFailed`` (with the stored item if the request asked for it), or
    what ``translate`` says.
    """
    try:
        getattr(client, operation)(**request)
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            existing: Item | None = exc.response.get("Item")  # type: ignore[assignment]
            raise PreconditionFailed(what, existing=existing, reasons=[]) from exc
        raise translate(exc, what=what, table=table or request.get("TableName")) from exc
    except LOST_RESPONSE as exc:
        raise translate(exc, what=what) from exc


def transact(
    client: Any, items: list[Item], *, what: str, token: str | None = None, table: str | None = None
) -> None:
    """One ``TransactWriteItems`` of ``items`` (each ``{"Put"|"Delete"|...: request}``).

    ``token`` is the ClientRequestToken (an SDK retry of a transaction that had in fact
    succeeded is then answered as a success). Raises ``PreconditionFailed`` with the
    cancellation reasons when a condition failed, or what ``translate`` says.
    """
    arguments: Item = {"TransactItems": items}
    if token is not None:
        arguments["ClientRequestToken"] = token
    try:
        client.transact_write_items(**arguments)
    except ClientError as exc:
        reasons: list[Item] = list(exc.response.get("CancellationReasons", []))  # type: ignore[arg-type]
        if _code(exc) == "TransactionCanceledException" and any(
            r.get("Code") == "ConditionalCheckFailed" for r in reasons
        ):
            raise PreconditionFailed(what, existing=None, reasons=reasons) from exc
        raise translate(exc, what=what, table=table) from exc
    except LOST_RESPONSE as exc:
        raise translate(exc, what=what) from exc


def read(
    operation: Callable[..., Any], *, what: str, table: str | None = None, **kwargs: Any
) -> Any:
    """One read request, its failure translated."""
    try:
        return operation(**kwargs)
    except ClientError as exc:
        raise translate(exc, what=what, table=table or kwargs.get("TableName")) from exc
    except LOST_RESPONSE as exc:
        raise translate(exc, what=what) from exc


def translate(
    exc: ClientError | Exception, *, what: str, table: str | None = None
) -> StoreUnavailableError:
    """What a failed request means, as the one error snapledger raises for it."""
    if isinstance(exc, LOST_RESPONSE):
        return TransientStoreError(f"no answer from DynamoDB for {what}: {exc}: retry")
    if not isinstance(exc, ClientError):
        return StoreUnavailableError(f"DynamoDB failed {what}: {exc}")
    code = _code(exc)
    if code == "TransactionCanceledException":
        reasons = [r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])]
        listed = ", ".join(reasons)
        if TRANSIENT_REASONS.intersection(reasons):
            return TransientStoreError(f"DynamoDB cancelled {what} ({listed}): retry later")
        return StoreUnavailableError(f"DynamoDB cancelled {what} ({listed}): {exc}")
    if code in TRANSIENT_ERRORS or _status(exc) >= 500:
        return TransientStoreError(f"DynamoDB is busy ({code}) for {what}: retry later")
    return StoreUnavailableError(
        _REFUSALS.get(code, _REFUSED).format(what=what, table=table, exc=exc, code=code)
    )


_REFUSED = "DynamoDB refused {what} ({code}): {exc}"
_REFUSALS = {
    "ResourceNotFoundException": (
        "the ledger table {table!r} does not exist ({what}): deploy the stack or check "
        "SNAPLEDGER_TABLE"
    ),
    "IdempotentParameterMismatchException": (
        "a retried transaction ({what}) differed from the first attempt; this is a bug: report it"
    ),
}


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
