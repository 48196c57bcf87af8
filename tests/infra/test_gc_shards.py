"""GC's fan-out in the template: the shard queue, its dead letters, gc's SQS trigger."""

from __future__ import annotations

from infra import names
from infra.constructs.function_specs import SPECS
from infra.constructs.gc_shards import MAX_RECEIVES, VISIBILITY_PER_FUNCTION_TIMEOUT
from snapledger.gc_settings import ENV_GC_QUEUE_URL
from tests.infra.conftest import Synthesized


def test_gc_works_shards_from_an_encrypted_queue_with_dead_letters(synth: Synthesized) -> None:
    shards = synth.stack.gc_shards
    queue_id = synth.logical_id(shards.queue)
    dead_id = synth.logical_id(shards.dead_letter_queue)
    queue = synth.template_json["Resources"][queue_id]["Properties"]
    # Redelivered MAX_RECEIVES times, then kept in the dead-letter queue
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dead_id, "Arn"]},
        "maxReceiveCount": MAX_RECEIVES,
    }
    gc_timeout = SPECS["gc"].timeout.to_seconds()
    assert queue["VisibilityTimeout"] == VISIBILITY_PER_FUNCTION_TIMEOUT * gc_timeout
    # gc's trigger: one shard an invocation, bounded concurrency, partial failures
    gc_id = synth.logical_id(synth.stack.functions.functions["gc"])
    [mapping] = [
        m["Properties"]
        for m in synth.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": gc_id}
    ]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["BatchSize"] == 1
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": names.GC_SHARD_WORKERS}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # The coordinator finds the queue; gc's reservation leaves room for every worker
    variables = synth.template_json["Resources"][gc_id]["Properties"]["Environment"]["Variables"]
    assert variables[ENV_GC_QUEUE_URL] == {"Ref": queue_id}
    assert SPECS["gc"].reserved == 1 + names.GC_SHARD_WORKERS


def test_shards_in_the_dead_letter_queue_alarm(synth: Synthesized) -> None:
    dead_id = synth.logical_id(synth.stack.gc_shards.dead_letter_queue)
    alarmed = [
        a["Properties"]
        for a in synth.resources("AWS::CloudWatch::Alarm").values()
        if {"Name": "QueueName", "Value": {"Fn::GetAtt": [dead_id, "QueueName"]}}
        in a["Properties"].get("Dimensions", [])
    ]
    assert len(alarmed) == 1 and alarmed[0]["Threshold"] == 1
