"""The registration FIFO queue and register's event source mapping, as synthesized."""

from __future__ import annotations

from infra.constructs.function_queues import (
    REGISTRATION_BATCH_SIZE,
    REGISTRATION_CONSUMERS,
    REGISTRATION_MAX_RECEIVES,
)
from infra.constructs.function_specs import SPECS
from snapledger import settings
from tests.infra.conftest import Synthesized


def test_the_queue_is_fifo_high_throughput_with_a_fifo_failure_queue(synth: Synthesized) -> None:
    queues = synth.resources("AWS::SQS::Queue")
    queue_id = synth.logical_id(synth.stack.functions.registration_queue)
    failures_id = synth.logical_id(synth.stack.functions.registration_failures)
    queue = queues[queue_id]["Properties"]
    assert queue["FifoQueue"] is True
    assert queue["ContentBasedDeduplication"] is False  # intake names the object write
    assert queue["DeduplicationScope"] == "messageGroup"
    assert queue["FifoThroughputLimit"] == "perMessageGroupId"
    assert queue["SqsManagedSseEnabled"] is True
    # Lambda asks for at least six times the function's timeout
    assert queue["VisibilityTimeout"] == 6 * SPECS["register"].timeout.to_seconds()
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [failures_id, "Arn"]},
        "maxReceiveCount": REGISTRATION_MAX_RECEIVES,
    }
    assert queues[failures_id]["Properties"]["FifoQueue"] is True


def test_register_consumes_it_one_batch_of_ten_per_group_reporting_failures(
    synth: Synthesized,
) -> None:
    register_id = synth.logical_id(synth.stack.functions.functions["register"])
    # (gc has its own SQS trigger: the GC shard queue)
    (mapping,) = [
        m
        for m in synth.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": register_id}
    ]
    properties = mapping["Properties"]
    queue_id = synth.logical_id(synth.stack.functions.registration_queue)
    assert properties["FunctionName"] == {"Ref": register_id}
    assert properties["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert properties["BatchSize"] == REGISTRATION_BATCH_SIZE == 10
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["ScalingConfig"] == {"MaximumConcurrency": REGISTRATION_CONSUMERS}
    # and intake knows where to send: the queue's URL in register's environment, and gc's
    # (the orphan sweep hands it a manifest the ledger never recorded), no other's
    gc_id = synth.logical_id(synth.stack.functions.functions["gc"])
    functions = synth.resources("AWS::Lambda::Function")
    with_queue = [
        logical_id
        for logical_id, function in functions.items()
        if settings.ENV_REGISTRATION_QUEUE_URL
        in function["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert sorted(with_queue) == sorted([register_id, gc_id])
    for function_id in with_queue:
        variables = functions[function_id]["Properties"]["Environment"]["Variables"]
        assert variables[settings.ENV_REGISTRATION_QUEUE_URL] == {"Ref": queue_id}


def test_the_mapping_stays_under_registers_reservation() -> None:
    reserved = SPECS["register"].reserved
    assert reserved is not None
    assert reserved > REGISTRATION_CONSUMERS
