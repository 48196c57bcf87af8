"""Cursors of the ledger table's paged queries: a page's ``LastEvaluatedKey`` handed out
as an opaque string, accepted back only by the query that gave it."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from snapledger.errors import InvalidRequestError
from snapledger.limits import MAX_CURSOR_CHARS, MAX_SORT_KEY_BYTES

Item = dict[str, Any]

#: What a refused cursor is told (the console's field name first).
NOT_A_CURSOR = (
    "cursor: not a cursor this query gave: pass back the 'cursor' of the last page "
    "unchanged, with the same query fields, or omit it to start from the beginning"
)


@dataclass(frozen=True)
class CursorScope:
    """The query a page's cursor belongs to; a cursor is accepted only by that query.

    ``attributes``: the key attributes of the table or index queried (what DynamoDB's
    ``LastEvaluatedKey`` holds); ``partition``: the (attribute, value) every key of the
    query has; ``sort``: the sort attribute and the ``(low, high)`` range or ``prefix``
    the key condition allows; ``query``: whatever else makes it that query (the index,
    the direction). A cursor carries a digest of all of it, and its key is checked
    against it before DynamoDB sees it.
    """

    attributes: frozenset[str]
    partition: tuple[str, str]
    sort: str | None = None
    low: str | None = None
    high: str | None = None
    prefix: str | None = None
    query: str = ""

    def digest(self) -> str:
        fields = [sorted(self.attributes), list(self.partition), self.sort, self.low]
        fields += [self.high, self.prefix, self.query]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:32]

    def admits(self, key: dict[str, str]) -> bool:
        """``key`` is one this query's pages can end on."""
        name, value = self.partition
        if key[name] != value:
            return False
        if self.sort is None:
            return True
        sort = key[self.sort]  # code-point order is UTF-8 byte order: DynamoDB's
        if self.prefix is not None and not sort.startswith(self.prefix):
            return False
        return (self.low is None or self.low <= sort) and (self.high is None or sort <= self.high)


def encode_cursor(last_key: Item, scope: CursorScope) -> str:
    """The cursor of a page that ended on ``last_key`` (a ``LastEvaluatedKey``)."""
    plain_key = {name: value["S"] for name, value in last_key.items()}
    body = {"q": scope.digest(), "k": plain_key}
    return base64.urlsafe_b64encode(json.dumps(body, sort_keys=True).encode()).decode()


def decode_cursor(cursor: str, scope: CursorScope) -> Item:
    """The ``ExclusiveStartKey`` of ``cursor``; InvalidRequestError unless the cursor is one
    ``scope``'s query gave: bounded, its digest, exactly its key attributes, each a
    non-empty string of at most a key's bytes, in its partition and key range."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidRequestError(f"{NOT_A_CURSOR} (it is over {MAX_CURSOR_CHARS} characters)")
    try:
        decoded = json.loads(base64.b64decode(cursor, altchars=b"-_", validate=True))
    except (ValueError, RecursionError) as exc:  # binascii, JSON and Unicode errors
        raise InvalidRequestError(NOT_A_CURSOR) from exc
    if not isinstance(decoded, dict) or set(decoded) != {"q", "k"}:
        raise InvalidRequestError(NOT_A_CURSOR)
    plain_key = decoded["k"]
    if decoded["q"] != scope.digest() or not isinstance(plain_key, dict):
        raise InvalidRequestError(NOT_A_CURSOR)
    if set(plain_key) != scope.attributes or not all(map(_key_value, plain_key.values())):
        raise InvalidRequestError(NOT_A_CURSOR)
    if not scope.admits(plain_key):
        raise InvalidRequestError(NOT_A_CURSOR)
    return {name: {"S": value} for name, value in plain_key.items()}


def _key_value(value: object) -> bool:
    """A string DynamoDB takes as a key attribute's value."""
    if not isinstance(value, str) or not value:
        return False
    try:
        return len(value.encode()) <= MAX_SORT_KEY_BYTES
    except UnicodeEncodeError:  # a lone surrogate: not UTF-8
        return False
