"""ledger_events: the events Pipe's enrichment, ledger stream records → domain events.

The Pipe invokes it with a batch of the ledger table's DynamoDB Streams records (new
``EV#`` items) and publishes each element of the answer to the snapledger bus as one event
(``detail-type`` = its ``type``). It reads nothing and writes nothing: no data access. A
record it cannot decode is published as ``LedgerEventUndecodable`` and logged as an error
(docs/events.md).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

import functions._startup  # noqa: F401  # before snapledger: see its docstring
from snapledger.adapters import dynamodb_stream_records as records
from snapledger.entrypoints.ledger_events import RecordFormat, publish_records

logger = Logger()
STREAM_RECORDS = RecordFormat(
    event=records.event_of,
    event_type=records.event_type_of,
    undecodable=records.undecodable_event,
    known_event_types=records.EVENT_TYPES,
)


@logger.inject_lambda_context
def handler(event: list[dict[str, Any]], context: LambdaContext) -> list[dict[str, Any]]:
    published = publish_records(event, STREAM_RECORDS)
    for undecodable in published.undecodable:
        logger.error(
            "a ledger stream record could not be decoded: published as LedgerEventUndecodable",
            extra=undecodable.model_dump(mode="json"),
        )
    return published.events
