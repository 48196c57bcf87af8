"""``-c kafkaStreamsStreams``: checked at synth; the two managed policies it scopes (issue 38).

What the policies allow is proven by execution in tests/deployed/test_kafka_streams_roles.py;
here: each refusal of the parameter, the statements' shape, and that the largest parameter
still fits a managed policy (6,144 characters, whitespace not counted).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from infra import names
from infra.config import kafka_streams_streams, stack_layouts
from infra.constructs.kafka_streams_policies import KafkaStreamsPolicies

TOPIC = "totals-app-totals-changelog"
MANAGED_POLICY_CHARS = 6_144


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("[totals", "must be a JSON list of changelog topics"),
        ('{"a": "b"}', "must be a list of changelog topic names"),
        ("[1]", "must be a list of changelog topic names"),
        ('["orders"]', "is not a changelog topic's name"),
        ('["a b-c-changelog"]', "entry 'a b-c-changelog': field 'key'"),
        ('["payments"]', "is not a changelog topic's name"),
        (json.dumps([f"app{i}-s-changelog" for i in range(6)]), "over the 5"),
    ],
)
def test_a_bad_parameter_is_refused_naming_the_problem(raw: str, says: str) -> None:
    with pytest.raises(ValueError, match="kafkaStreamsStreams") as refused:
        stack_layouts(None, None, raw)
    assert says in str(refused.value)


def test_a_topic_that_is_also_a_restate_stream_is_refused() -> None:
    with pytest.raises(ValueError, match=f"stream {TOPIC!r} is also entry 'restate/prod-1'"):
        stack_layouts(None, {"restate/prod-1": TOPIC}, json.dumps([TOPIC]))


def test_the_topics_are_sorted_without_repeats() -> None:
    other = "a-b-changelog"
    assert kafka_streams_streams(json.dumps([TOPIC, other, TOPIC])) == (other, TOPIC)
    assert kafka_streams_streams([TOPIC]) == (TOPIC,)  # from cdk.json: a list
    assert kafka_streams_streams(None) == kafka_streams_streams("") == ()


def _policies(topics: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    stack = Stack(App(), "Probe")
    bucket = s3.Bucket(stack, "Bucket")
    query = lambda_.Function.from_function_arn(
        stack, "Query", f"arn:aws:lambda:us-east-1:123456789012:function:{'q' * 64}"
    )
    KafkaStreamsPolicies(stack, "KafkaStreams", bucket=bucket, query=query, topics=topics)
    template = Template.from_stack(stack).to_json()
    return {
        output: template["Resources"][template["Outputs"][output]["Value"]["Ref"]]["Properties"][
            "PolicyDocument"
        ]
        for output in (
            names.OUTPUT_KAFKA_STREAMS_SEED_POLICY,
            names.OUTPUT_KAFKA_STREAMS_SNAPSHOT_POLICY,
        )
    }


def test_the_statements_name_every_action_and_scope_the_listing() -> None:
    seed, snapshot = _policies((TOPIC,)).values()
    for document in (seed, snapshot):
        for statement in document["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in a for a in actions), statement
        listing = next(s for s in document["Statement"] if s["Action"] == "s3:ListBucket")
        assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"snapshots/{TOPIC}/*"]}}
    assert not any(s["Effect"] == "Deny" for s in seed["Statement"])
    assert not any("s3:PutObject" in json.dumps(s["Action"]) for s in seed["Statement"])
    deny = next(s for s in snapshot["Statement"] if s["Effect"] == "Deny")
    assert deny["Action"] == "s3:PutObject"
    assert deny["Condition"] == {"Null": {"s3:if-none-match": "true"}}


_LONGEST_REFS = {
    "AWS::StackId": "arn:aws-us-gov:cloudformation:us-gov-west-1:123456789012:stack/"
    + "s" * 128
    + "/01234567-89ab-cdef-0123-456789abcdef",
    "AWS::Partition": "aws-us-gov",
}


def _resolved(value: Any) -> Any:
    """The longest values each intrinsic can take (bucket name 63, a stack name 128)."""
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_resolved(p)) for p in parts)
    if "Fn::GetAtt" in value:
        return "arn:aws-us-gov:s3:::" + "b" * 63
    if "Ref" in value:
        return _LONGEST_REFS.get(value["Ref"], "b" * 63)
    return {k: _resolved(v) for k, v in value.items()}


def test_the_largest_parameter_fits_a_managed_policy() -> None:
    longest = tuple(
        f"{str(i) * 100}-{'s' * 17}-changelog" for i in range(names.MAX_KAFKA_STREAMS_STREAMS)
    )
    assert all(len(t) == 128 for t in longest)  # the longest stream name
    assert stack_layouts(None, None, json.dumps(list(longest))).of("kafka-streams") == tuple(
        e for e in stack_layouts(dict.fromkeys(longest, "kafka-streams")).entries
    )
    for output, document in _policies(longest).items():
        size = len(json.dumps(_resolved(document), separators=(",", ":")))
        assert size <= MANAGED_POLICY_CHARS, (output, size)
