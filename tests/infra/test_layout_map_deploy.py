"""``-c layouts`` (the layout map) and the deprecated per-layout parameters it replaces.

An upgrade changes nothing deployed: the app synthesized with the old parameters
(``-c restatePrefixes``, ``-c kafkaStreamsStreams``) and with the equivalent map is the same
template, resource for resource. Two syntheses, for this module alone.
"""

from __future__ import annotations

import json

import pytest
from aws_cdk import App

from infra import names
from infra.config import StackConfig, stack_layouts
from snapledger.layouts.layout_map import layout_map
from tests.infra.conftest import Synthesized, synthesize_app

TOPIC = "totals-app-totals-changelog"
CLUSTERS = {"restate/prod-1": "payments", "/restate/prod-2/": "ledger"}
OLD = (
    (names.CTX_RESTATE_PREFIXES, json.dumps(CLUSTERS)),
    (names.CTX_KAFKA_STREAMS_STREAMS, json.dumps([TOPIC])),
)
MAP = {
    "restate/prod-1": {"layout": "restate", "stream": "payments"},
    "restate/prod-2": {"layout": "restate", "stream": "ledger"},
    TOPIC: {"layout": "kafka-streams"},
}
NEW = ((names.CTX_LAYOUTS, json.dumps(MAP)),)


@pytest.fixture(scope="module")
def old_and_new() -> tuple[Synthesized, Synthesized]:
    return synthesize_app(OLD), synthesize_app(NEW)


def test_the_old_parameters_and_the_equivalent_map_synthesize_the_same_template(
    old_and_new: tuple[Synthesized, Synthesized],
) -> None:
    old, new = old_and_new
    assert old.template_json["Resources"].keys() == new.template_json["Resources"].keys()
    for logical_id, resource in old.template_json["Resources"].items():
        assert new.template_json["Resources"][logical_id] == resource, logical_id
    assert old.template_json == new.template_json
    # and it is a stack with both layouts deployed: the comparison means something
    register = old.template_json["Resources"][
        old.logical_id(old.stack.functions.functions["register"])
    ]
    variables = register["Properties"]["Environment"]["Variables"]
    assert layout_map(variables["SNAPLEDGER_LAYOUTS"]) == layout_map(MAP)
    assert [k for k in old.template_json["Outputs"] if k.startswith("RestateNode")]
    assert old.resources("AWS::IAM::ManagedPolicy")


def _config(**context: object) -> StackConfig:
    return StackConfig.from_context(App(context=context).node)


def test_the_map_is_read_from_a_string_or_an_object_and_joins_the_old_parameters() -> None:
    assert _config(layouts=json.dumps(MAP)).layouts == layout_map(MAP)
    assert _config(layouts=MAP).layouts == layout_map(MAP)  # cdk.json gives an object
    both = _config(layouts=json.dumps(MAP), restatePrefixes=json.dumps(CLUSTERS))
    assert both.layouts == layout_map(MAP)  # the same entries, given twice, agree
    assert both.restate_prefixes == {"restate/prod-2": "ledger", "restate/prod-1": "payments"}
    assert both.kafka_streams_streams == (TOPIC,)


@pytest.mark.parametrize(
    ("context", "says"),
    [
        ({"layouts": "{nope"}, "layouts must be a JSON object"),
        ({"layouts": '{"x": {"layout": "fluss"}}'}, "-c layouts: entry 'x': field 'layout'"),
        (
            {"layouts": json.dumps(MAP), "restatePrefixes": '{"restate/prod-1": "orders"}'},
            "(deprecated): entry 'restate/prod-1' is",
        ),
        (
            {"layouts": '{"restate/*": {"layout": "restate", "stream": "s"}}'},
            "-c layouts: entry 'restate/*': field 'key': holds '*'",
        ),
        (
            {"layouts": json.dumps({f"app{i}-s-changelog": "kafka-streams" for i in range(6)})},
            "over the 5",
        ),
    ],
)
def test_a_bad_map_fails_naming_the_entry_and_the_field(context: dict, says: str) -> None:
    with pytest.raises(ValueError) as refused:
        _config(**context)
    assert says in str(refused.value)
    assert stack_layouts(None) == layout_map({})
