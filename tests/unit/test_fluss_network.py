"""``-c fluss`` checked at synth (infra/fluss_network.py): each bad field named with what to
give; unset, nothing; kazoo missing from the synthesizing environment named with the extra."""

from __future__ import annotations

import json

import pytest

from infra import fluss_network as module
from infra.fluss_network import MAX_SECURITY_GROUPS, MAX_SUBNETS, FlussNetwork, fluss_network
from snapledger.layouts.layout_map import layout_map

FLUSS = layout_map({"fluss/kv/shop/orders-7": {"layout": "fluss-kv", "stream": "orders-kv"}})
GOOD = {
    "zookeeper": "zk-1:2181,zk-2:2181/fluss",
    "subnetIds": ["subnet-0abc12345"],
    "securityGroupIds": ["sg-0123abcd"],
}


def test_a_good_setting_as_json_text_or_an_object():
    expected = FlussNetwork("zk-1:2181,zk-2:2181/fluss", ("subnet-0abc12345",), ("sg-0123abcd",))
    assert fluss_network(json.dumps(GOOD), FLUSS) == expected
    assert fluss_network(GOOD, FLUSS) == expected


@pytest.mark.parametrize("unset", [None, ""])
def test_unset_is_none(unset):
    assert fluss_network(unset, layout_map({})) is None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"zookeeper": "zk-1"}, r"fluss\.zookeeper must be Fluss's zookeeper\.address"),
        ({"zookeeper": "zk-1:2181;rm"}, r"fluss\.zookeeper must be"),
        ({"zookeeper": 2181}, r"fluss\.zookeeper must be"),
        ({"zookeeper": "z" * 1020 + ":2181"}, r"is 1,025 characters, over 1024"),
        ({"subnetIds": []}, r"fluss\.subnetIds must be a non-empty list of ids \(subnet-"),
        ({"subnetIds": "subnet-0abc12345"}, r"fluss\.subnetIds must be a non-empty list"),
        ({"subnetIds": ["vpc-0abc12345"]}, r"'vpc-0abc12345' is not an id \(subnet- then"),
        (
            {"subnetIds": [f"subnet-{i:08x}" for i in range(MAX_SUBNETS + 1)]},
            rf"names {MAX_SUBNETS + 1}: Lambda takes at most {MAX_SUBNETS}",
        ),
        (
            {"securityGroupIds": [f"sg-{i:08x}" for i in range(MAX_SECURITY_GROUPS + 1)]},
            rf"fluss\.securityGroupIds names {MAX_SECURITY_GROUPS + 1}",
        ),
        ({"securityGroupIds": ["sg-0123abcd", "sg-0123abcd"]}, r"names an id twice"),
        ({"vpcId": "vpc-0abc1234"}, r"unknown field\(s\) vpcId"),
    ],
)
def test_each_bad_field_is_named(change, says):
    with pytest.raises(ValueError, match=says):
        fluss_network({**GOOD, **change}, FLUSS)


def test_text_that_is_not_json_or_not_an_object_is_refused_with_an_example():
    with pytest.raises(ValueError, match=r"must be a JSON object, e\.g\. .*zookeeper"):
        fluss_network("{zookeeper: zk}", FLUSS)
    with pytest.raises(ValueError, match=r"must be an object"):
        fluss_network(["zk-1:2181"], FLUSS)


def test_without_a_fluss_kv_layout_the_setting_is_refused():
    with pytest.raises(ValueError, match=r"no entry of the layout map .* is fluss-kv"):
        fluss_network(GOOD, layout_map({}))


def test_kazoo_missing_where_the_stack_is_synthesized_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"pip install 'snapledger\[fluss\]'"):
        module.kazoo_package()
