"""Helpers of the function tests: AWS sample events, a fake Lambda context, EMF parsing."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from infra.constants import METRICS_NAMESPACE, SERVICE_NAME
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.entrypoints.stream_metrics import STREAM_DIMENSION

SERVICE_DIMENSION = "service"

SAMPLE_EVENTS = Path(__file__).parent.parent / "events"
POWERTOOLS_ENV = {
    "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
    "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
    "POWERTOOLS_TRACE_DISABLED": "true",
}
Handler = Callable[[Any, Any], dict[str, Any]]


@dataclass(frozen=True)
class FakeLambdaContext:
    """What Powertools Logger reads from the Lambda context."""

    function_name: str = "snapledger-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:snapledger-test"
    aws_request_id: str = "5c3e0c5e-0000-4000-8000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def sample_event(name: str) -> dict[str, Any]:
    """An AWS sample event from tests/events (see its README for the sources)."""
    event: dict[str, Any] = json.loads((SAMPLE_EVENTS / name).read_text())
    return event


def s3_encode(key: str) -> str:
    """URL-encode a key the way S3 notifications do ('red flower.jpg' → 'red+flower.jpg')."""
    return quote_plus(key, safe="/")


def s3_put_event(*keys: str, encode: Callable[[str], str] = s3_encode) -> dict[str, Any]:
    """The sample S3 Put notification with one record per key, keys encoded as S3 does."""
    event = sample_event("s3-put.json")
    template = event["Records"][0]
    records = []
    for key in keys:
        record = copy.deepcopy(template)
        record["s3"]["object"]["key"] = encode(key)
        records.append(record)
    event["Records"] = records
    return event


def object_created_event(key: str) -> dict[str, Any]:
    """The sample EventBridge ``Object Created`` event for ``key`` (not encoded)."""
    event = sample_event("s3-eventbridge-object-created.json")
    event["detail"]["object"]["key"] = key
    return event


def item_count(ledger: DynamoLedger) -> int:
    """Every item in the ledger's table."""
    return int(ledger.client.scan(TableName=ledger.table_name, Select="COUNT")["Count"])


def emf_blobs(stdout: str) -> list[dict[str, Any]]:
    """The EMF blobs a handler printed (one JSON object a line, with ``_aws``)."""
    return [
        json.loads(line) for line in stdout.splitlines() if line.startswith("{") and "_aws" in line
    ]


def _values(blob: dict[str, Any], dimensions: list[str]) -> dict[str, float]:
    """The blob's metrics, if it publishes them under exactly ``dimensions`` (any order)."""
    values: dict[str, float] = {}
    for directive in blob["_aws"]["CloudWatchMetrics"]:
        if sorted(dimensions) not in [sorted(d) for d in directive["Dimensions"]]:
            continue
        for metric in directive["Metrics"]:
            value = blob[metric["Name"]]
            values[metric["Name"]] = sum(value) if isinstance(value, list) else value
    return values


def emitted_metrics(stdout: str) -> dict[str, float]:
    """The metric values the handler published under ``service`` alone, summed over blobs."""
    values: dict[str, float] = {}
    for blob in emf_blobs(stdout):
        for name, value in _values(blob, [SERVICE_DIMENSION]).items():
            values[name] = values.get(name, 0) + value
    return values


def emitted_stream_metrics(stdout: str) -> dict[tuple[str, str], list[float]]:
    """``(metric, stream)`` → each value published under ``service`` and ``Stream``."""
    values: dict[tuple[str, str], list[float]] = {}
    for blob in emf_blobs(stdout):
        for name, value in _values(blob, [SERVICE_DIMENSION, STREAM_DIMENSION]).items():
            values.setdefault((name, blob[STREAM_DIMENSION]), []).append(value)
    return values


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """ReceiveMessage's messages as the SQS event Lambda's event source mapping delivers."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m["Attributes"],
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }
