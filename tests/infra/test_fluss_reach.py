"""``-c fluss`` (infra/fluss_network.py, docs/fluss.md "On AWS"): the gc function, and it
alone, runs in the Fluss cluster's subnets with its security groups, knows its ZooKeeper and
carries kazoo in a layer; its role may create network interfaces only there. Bad settings
are refused at synth naming the field (tests/unit/test_fluss_network.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra import names
from infra.constructs.fluss_reach import CREATE_SID, DESCRIBE_SID, MANAGE_SID
from snapledger.settings import ENV_FLUSS_ZOOKEEPER
from tests.infra.conftest import Synthesized, synthesize_app
from tests.infra.test_iam import _statements_of_role
from tests.infra.test_ledger_events import _asset_dir

KV_PREFIX = "fluss/kv/shop/orders-7"
NETWORK = {
    "zookeeper": "zk-1.fluss.internal:2181,zk-2.fluss.internal:2181/fluss-prod",
    "subnetIds": ["subnet-0abc12345", "subnet-0def67890"],
    "securityGroupIds": ["sg-0123abcd"],
}
FLUSS_CONTEXT = (
    (names.CTX_LAYOUTS, json.dumps({KV_PREFIX: {"layout": "fluss-kv", "stream": "orders-kv"}})),
    (names.CTX_FLUSS, json.dumps(NETWORK)),
)


@pytest.fixture(scope="module")
def fluss_synth() -> Synthesized:
    return synthesize_app(FLUSS_CONTEXT)


def _function(synth: Synthesized, name: str) -> dict[str, Any]:
    function = synth.stack.functions.functions[name]
    return synth.template_json["Resources"][synth.logical_id(function)]["Properties"]


def layer_asset(synth: Synthesized) -> Path:
    """The Fluss layer's directory in cdk.out, as the deploy uploads it."""
    [layer] = [
        r
        for r in synth.resources("AWS::Lambda::LayerVersion").values()
        if "kazoo" in r["Properties"].get("Description", "")
    ]
    return _asset_dir(synth, layer["Properties"]["Content"])


def test_only_gc_runs_in_the_fluss_subnets_with_its_zookeeper_and_layer(
    fluss_synth: Synthesized,
):
    gc = _function(fluss_synth, "gc")
    assert gc["VpcConfig"] == {
        "SubnetIds": NETWORK["subnetIds"],
        "SecurityGroupIds": NETWORK["securityGroupIds"],
    }
    assert gc["Environment"]["Variables"][ENV_FLUSS_ZOOKEEPER] == NETWORK["zookeeper"]
    layers = json.dumps(gc["Layers"])
    [layer_id] = [
        i
        for i, r in fluss_synth.resources("AWS::Lambda::LayerVersion").items()
        if "kazoo" in r["Properties"].get("Description", "")
    ]
    assert layer_id in layers
    for name in fluss_synth.stack.functions.functions:
        if name == "gc":
            continue
        props = _function(fluss_synth, name)
        assert "VpcConfig" not in props, name
        assert ENV_FLUSS_ZOOKEEPER not in props.get("Environment", {}).get("Variables", {})
        assert layer_id not in json.dumps(props.get("Layers", [])), name


def test_the_layer_as_built_holds_kazoo_under_python(fluss_synth: Synthesized):
    folder = layer_asset(fluss_synth)
    assert (folder / "python" / "kazoo" / "__init__.py").is_file()
    assert (folder / "python" / "kazoo" / "client.py").is_file()
    assert not list(folder.rglob("__pycache__"))


def test_gc_may_create_interfaces_only_in_the_fluss_subnets_and_groups(
    fluss_synth: Synthesized,
):
    role = fluss_synth.stack.functions.functions["gc"].role
    assert role is not None
    statements = {s.get("Sid"): s for s in _statements_of_role(fluss_synth, role)}
    create = statements[CREATE_SID]
    assert create["Action"] == "ec2:CreateNetworkInterface"
    resources = json.dumps(create["Resource"])
    for wanted in [
        "network-interface/*",
        *(f"subnet/{s}" for s in NETWORK["subnetIds"]),
        *(f"security-group/{g}" for g in NETWORK["securityGroupIds"]),
    ]:
        assert wanted in resources, wanted
    assert len(create["Resource"]) == 1 + len(NETWORK["subnetIds"]) + len(
        NETWORK["securityGroupIds"]
    )
    manage = statements[MANAGE_SID]
    assert sorted(manage["Action"]) == [
        "ec2:AssignPrivateIpAddresses",
        "ec2:DeleteNetworkInterface",
        "ec2:UnassignPrivateIpAddresses",
    ]
    assert "network-interface/*" in json.dumps(manage["Resource"])
    describe = statements[DESCRIBE_SID]
    assert sorted(describe["Action"]) == ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
    assert describe["Resource"] == "*"
    # no other function's role may touch EC2
    for name, function in fluss_synth.stack.functions.functions.items():
        if name != "gc" and function.role is not None:
            assert "ec2:" not in json.dumps(_statements_of_role(fluss_synth, function.role))


def test_without_fluss_no_function_is_in_a_vpc_or_carries_kazoo(synth: Synthesized):
    assert all(
        "VpcConfig" not in r["Properties"]
        for r in synth.resources("AWS::Lambda::Function").values()
    )
    assert not [
        r
        for r in synth.resources("AWS::Lambda::LayerVersion").values()
        if "kazoo" in r["Properties"].get("Description", "")
    ]


def test_the_docs_examples_are_settings_the_synth_accepts():
    from infra.config import stack_layouts
    from infra.fluss_network import fluss_network

    fluss_doc = (names.REPO_ROOT / "docs" / "fluss.md").read_text(encoding="utf-8")
    deploy_doc = (names.REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    [layouts] = re.findall(r"-c 'layouts=(\{\"fluss/kv.*?\})'", fluss_doc)
    examples = re.findall(r"-c 'fluss=(\{.*?\})'", fluss_doc + deploy_doc)
    assert len(examples) == 2
    for example in examples:
        network = fluss_network(example, stack_layouts(layouts))
        assert network is not None and network.zookeeper == "zk-1.fluss.internal:2181"
