"""The GC shard queue on SQS (moto): one SendMessageBatch per ten shards, refusals named."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from snapledger.adapters.sqs_gc_shards import SqsShardQueue
from snapledger.errors import InvalidRequestError, StoreUnavailableError


@pytest.fixture
def sqs():
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def test_ten_bodies_go_in_one_request_and_arrive(sqs):
    url = sqs.create_queue(QueueName="gc-shards")["QueueUrl"]
    requests: list[str] = []
    sqs.meta.events.register("before-call.sqs", lambda model, **_: requests.append(model.name))
    queue = SqsShardQueue(url, client=sqs)
    assert queue.send([f"shard {i}" for i in range(10)]) == []
    assert requests == ["SendMessageBatch"]
    received: list[str] = []
    while len(received) < 10:
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        received += [m["Body"] for m in answer.get("Messages", [])]
    assert sorted(received) == sorted(f"shard {i}" for i in range(10))


def test_more_than_ten_is_refused_before_any_request(sqs):
    url = sqs.create_queue(QueueName="gc-shards")["QueueUrl"]
    with pytest.raises(InvalidRequestError, match="at most ten"):
        SqsShardQueue(url, client=sqs).send(["x"] * 11)


def test_a_missing_queue_is_an_error_that_says_the_next_run_retries(sqs):
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"
    with pytest.raises(StoreUnavailableError, match="next scheduled run sends them again"):
        SqsShardQueue(url, client=sqs).send(["x"])
