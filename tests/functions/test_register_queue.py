"""register with the registration FIFO queue (moto SQS): intake on S3 events, consumer on SQS.

The SQS events are built from the messages moto's queue returns, in the shape Lambda's
event source mapping delivers them (``Records``: ``messageId``, ``receiptHandle``,
``body``, ``attributes`` with ``MessageGroupId``, ``eventSource = "aws:sqs"``).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import boto3
import pytest

from snapledger.adapters.sqs_registration_queue import SqsRegistrationQueue
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.runtime import runtime_override
from snapledger.services.queries import iter_snapshots
from tests.functions.support import s3_put_event, sqs_event
from tests.functions.test_register import FailingStore
from tests.support import make_runtime, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
ORDERS_4 = LineageId(stream="orders", partition=4)


@pytest.fixture
def queue_url(ledger) -> str:  # inside the ledger's mock_aws
    sqs = boto3.client("sqs", region_name="us-east-1")
    return sqs.create_queue(
        QueueName="registrations.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"},
    )["QueueUrl"]


@pytest.fixture
def queued_rt(ledger, store, clock, queue_url):
    queue = SqsRegistrationQueue(queue_url, client=boto3.client("sqs", region_name="us-east-1"))
    with runtime_override(
        replace(make_runtime(ledger, store, clock), registration_queue=queue)
    ) as injected:
        yield injected


def receive_as_lambda(queue_url: str) -> dict[str, Any]:
    """Every message in the queue, as one SQS event of Lambda's event source mapping."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages = []
    while got := sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
    ).get("Messages", []):
        messages += got
    arn = "arn:aws:sqs:us-east-1:123456789012:registrations.fifo"
    return sqs_event(messages, arn, "us-east-1")


def test_intake_queues_each_manifest_in_its_lineages_group(
    queued_rt, ledger, store, context, register_handler, queue_url
):
    # Given manifests of two lineages and one whose key names no lineage
    a = write_snapshot(store, "orders", 3, 100)
    b = write_snapshot(store, "orders", 4, 100)
    c = write_snapshot(store, "orders", 3, 200)
    stray = "snapshots/orders/not-a-partition/x/_manifest.json"
    store.put(stray, b"{}")
    # When S3 notifies register
    answer = register_handler(s3_put_event(a, b, c, stray), context)
    # Then the lineages' manifests are queued and the stray one is recorded as today
    assert answer["counts"] == {"queued": 3, "rejected": 1}
    assert ledger.get_head(ORDERS_3) is None  # nothing registered yet: the consumer does
    event = receive_as_lambda(queue_url)
    assert [(r["body"], r["attributes"]["MessageGroupId"]) for r in event["Records"]] == [
        (a, "orders/3"),
        (b, "orders/4"),
        (c, "orders/3"),
    ]


def test_a_redelivered_notification_is_deduplicated_by_the_queue(
    queued_rt, store, context, register_handler, queue_url
):
    # Given one manifest's notification, delivered twice by S3 (same sequencer)
    key = write_snapshot(store, "orders", 3, 100)
    register_handler(s3_put_event(key), context)
    register_handler(s3_put_event(key), context)
    # Then the queue holds it once
    assert len(receive_as_lambda(queue_url)["Records"]) == 1


def test_consumer_registers_a_delivery_one_transaction_per_lineage(
    queued_rt, ledger, store, context, register_handler, queue_url
):
    # Given five manifests on two lineages, queued by intake
    keys = [write_snapshot(store, "orders", 3, lsn) for lsn in (100, 300, 200)]
    keys += [write_snapshot(store, "orders", 4, lsn) for lsn in (50, 60)]
    register_handler(s3_put_event(*keys), context)
    event = receive_as_lambda(queue_url)
    # When the event source mapping delivers them, counting the ledger's transactions
    transactions = []
    ledger.client.meta.events.register(
        "before-call.dynamodb.TransactWriteItems", lambda **kw: transactions.append(kw)
    )
    answer = register_handler(event, context)
    # Then every message succeeded, each lineage in one transaction
    assert answer["batchItemFailures"] == []
    assert answer["counts"] == {"became_latest": 4, "recorded": 1}
    assert len(transactions) == 2
    assert ledger.get_head(ORDERS_3).latest_lsn == 300
    assert ledger.get_head(ORDERS_4).latest_lsn == 60
    # When the same delivery comes again (after SQS's deduplication window)
    again = register_handler(copy.deepcopy(event), context)
    # Then nothing is written twice
    assert again["counts"] == {"duplicate": 5}
    assert again["batchItemFailures"] == []
    assert sum(1 for _ in iter_snapshots(ledger, ORDERS_3)) == 3


def test_a_failed_manifest_returns_itself_only_not_its_lineages_later_messages(
    ledger, store, clock, context, register_handler, queue_url, queued_rt
):
    # Given a delivery: orders/3 at 100 (unreadable), orders/4 at 50, orders/3 at 200
    unreadable = write_snapshot(store, "orders", 3, 100)
    other = write_snapshot(store, "orders", 4, 50)
    later = write_snapshot(store, "orders", 3, 200)
    register_handler(s3_put_event(unreadable, other, later), context)
    event = receive_as_lambda(queue_url)
    ids = {r["body"]: r["messageId"] for r in event["Records"]}
    # When reading the first manifest fails
    failing = replace(
        make_runtime(ledger, FailingStore(store, unreadable), clock),
        registration_queue=queued_rt.registration_queue,
    )
    with runtime_override(failing):
        answer = register_handler(event, context)
    # Then only that message returns to the queue: the later one of its lineage is
    # registered (issue 27: one failure never holds back another manifest)
    assert answer["batchItemFailures"] == [{"itemIdentifier": ids[unreadable]}]
    assert ledger.get_head(ORDERS_4).latest_lsn == 50
    assert ledger.get_head(ORDERS_3).latest_lsn == 200
    # When it is redelivered and the store answers
    redelivered = {"Records": [r for r in event["Records"] if r["body"] == unreadable]}
    with runtime_override(queued_rt):
        answer = register_handler(redelivered, context)
    # Then both are registered
    assert answer["batchItemFailures"] == []
    statuses = {s.lsn: s.status for s in iter_snapshots(ledger, ORDERS_3)}
    assert statuses == {100: SnapshotStatus.REGISTERED, 200: SnapshotStatus.REGISTERED}


def test_a_malformed_sqs_event_is_answered_with_the_fields_at_fault(
    queued_rt, context, register_handler
):
    event = {"Records": [{"eventSource": "aws:sqs", "messageId": "m1", "body": "k"}]}
    answer = register_handler(event, context)
    assert answer["ok"] is False
    assert "attributes" in str(answer)
