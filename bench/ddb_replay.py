"""DynamoDB's own time for a piece of work: record its requests, replay them with no code.

``Recorder`` keeps every DynamoDB request a client makes that succeeds (operation and
API parameters, in order, with the thread that made it; a request refused by its
condition is the code's lost race, and is left out). ``copy_table`` copies a table's
items into a new table of the same definition, so the copy is in the state the recorded
work started from;
``replay`` then sends the same requests, retargeted to the copy, verbatim (conditions
included, so a replay that drifted from the recording fails instead of timing something
else; only a transaction's idempotency token is new): sequentially, or on as many threads
as recorded, each lineage's requests in their order (GC's workers hand a lineage's marks
to each other, so a lineage's requests are not one thread's).

The replay's time is the floor of the work on this engine: what its DynamoDB requests
cost with nothing around them (no decisions, no object store, no serialization beyond
botocore's).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from snapledger.adapters.table_definition import create_table_request

BATCH_WRITE_ITEMS = 25  # BatchWriteItem's limit
_PARAMS = "bench.replay.params"


@dataclass(frozen=True)
class Call:
    order: int
    thread: int
    operation: str  # the API name, e.g. TransactWriteItems
    params: dict[str, Any]


@dataclass
class Recorder:
    """The DynamoDB requests ``client`` makes while recording."""

    client: Any
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _order: Any = field(default_factory=itertools.count)

    def __enter__(self) -> Recorder:
        self.client.meta.events.register("before-parameter-build.dynamodb", self._keep)
        self.client.meta.events.register("after-call.dynamodb", self._record)
        return self

    def __exit__(self, *_: object) -> None:
        self.client.meta.events.unregister("before-parameter-build.dynamodb", self._keep)
        self.client.meta.events.unregister("after-call.dynamodb", self._record)

    @staticmethod
    def _keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # A shallow copy: cheap enough not to slow the recorded work, and enough for the
        # code's requests (built afresh each time; pagination changes top-level keys only).
        context[_PARAMS] = dict(params)

    def _record(self, http_response: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code >= 300:  # a lost race, retried by the code: not replayed
            return
        with self._lock:
            self.calls.append(
                Call(next(self._order), threading.get_ident(), model.name, context[_PARAMS])
            )


def copy_table(client: Any, source: str, target: str) -> int:
    """Create ``target`` like ``source`` and copy every item into it; the item count."""
    client.create_table(**create_table_request(target))
    copied = 0
    for page in client.get_paginator("scan").paginate(TableName=source, ConsistentRead=True):
        items = page.get("Items", [])
        for start in range(0, len(items), BATCH_WRITE_ITEMS):
            batch = [{"PutRequest": {"Item": i}} for i in items[start : start + BATCH_WRITE_ITEMS]]
            pending: dict[str, Any] = {target: batch}
            while pending:
                pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems", {})
        copied += len(items)
    return copied


def replay(
    client: Any, calls: Iterable[Call], source: str, target: str, *, parallel: bool
) -> float:
    """Send ``calls`` again against ``target`` (instead of ``source``); the seconds taken."""
    methods = {api: method for method, api in client.meta.method_to_api_mapping.items()}
    ordered = sorted(calls, key=lambda c: c.order)

    def send(sequence: list[Call]) -> None:
        for call in sequence:
            params = _retarget(call.params, source, target)
            if "ClientRequestToken" in params:  # a token is bound to its first request's body
                params["ClientRequestToken"] = str(uuid.uuid4())
            getattr(client, methods[call.operation])(**params)

    started = time.perf_counter()
    if not parallel:
        send(ordered)
    else:
        by_lineage: dict[str, list[Call]] = {}
        for call in ordered:
            by_lineage.setdefault(_lineage_of(call.params), []).append(call)
        workers = len({call.thread for call in ordered}) or 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(send, by_lineage.values()))
    return time.perf_counter() - started


def _lineage_of(value: Any) -> str:
    """The first lineage key (``LIN#...``) a request names, or "" for none (HEAD pages)."""
    if isinstance(value, str):
        return value if value.startswith("LIN#") else ""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        if found := _lineage_of(item):
            return found
    return ""


def _retarget(value: Any, source: str, target: str) -> Any:
    """``value`` with every reference to table ``source`` (TableName, RequestItems) changed."""
    if isinstance(value, dict):
        return {
            (target if key == source else key): (
                target if key == "TableName" and item == source else _retarget(item, source, target)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_retarget(item, source, target) for item in value]
    return value
