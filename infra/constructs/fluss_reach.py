"""The gc function placed where it reaches a Fluss cluster's ZooKeeper (``-c fluss``,
infra/fluss_network.py): in the cluster's subnets with the security groups given, with
``SNAPLEDGER_FLUSS_ZOOKEEPER`` set and kazoo (the ``fluss`` extra, pure Python) in a layer of
its own, which no other function carries.

Lambda creates the function's network interfaces with its role, so the role may create one
only in those subnets with those security groups, and delete and address network interfaces
(whose ids are not known in advance); EC2's ``DescribeNetworkInterfaces`` and
``DescribeSubnets`` have no resource-level permissions.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.constructs.function_specs import RUNTIME
from infra.fluss_network import FlussNetwork, kazoo_package
from infra.nag import acknowledge, iam5
from infra.packaging import stage_python_layer
from snapledger.settings import ENV_FLUSS_ZOOKEEPER

#: The statements' ids (tests/infra/test_fluss_reach.py reads them).
CREATE_SID, MANAGE_SID, DESCRIBE_SID = (
    "CreateNetworkInterfacesInFlussSubnets",
    "DeleteAndAddressNetworkInterfaces",
    "DescribeNetworkInterfaces",
)


def reach_fluss(scope: Construct, gc: lambda_.Function, network: FlussNetwork) -> None:
    """Put ``gc`` in ``network``'s subnets with its layer, setting and grants."""
    layer = lambda_.LayerVersion(
        scope,
        "FlussZooKeeperClient",
        code=lambda_.Code.from_asset(str(stage_python_layer(kazoo_package()))),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[lambda_.Architecture.ARM_64],
        description="kazoo (snapledger[fluss]): gc reads and drops Fluss's snapshot nodes",
    )
    gc.add_layers(layer)
    gc.add_environment(ENV_FLUSS_ZOOKEEPER, network.zookeeper)
    cfn = gc.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=list(network.subnet_ids), security_group_ids=list(network.security_group_ids)
    )
    stack = Stack.of(scope)

    def ec2(resource: str) -> str:
        return stack.format_arn(service="ec2", resource=resource)

    interfaces = ec2("network-interface/*")
    gc.add_to_role_policy(
        iam.PolicyStatement(
            sid=CREATE_SID,
            actions=["ec2:CreateNetworkInterface"],
            resources=[
                interfaces,
                *(ec2(f"subnet/{s}") for s in network.subnet_ids),
                *(ec2(f"security-group/{g}") for g in network.security_group_ids),
            ],
        )
    )
    gc.add_to_role_policy(
        iam.PolicyStatement(
            sid=MANAGE_SID,
            actions=[
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
            resources=[interfaces],
        )
    )
    gc.add_to_role_policy(
        iam.PolicyStatement(
            sid=DESCRIBE_SID,
            actions=["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"],
            resources=["*"],
        )
    )
    role = gc.role
    assert role is not None
    acknowledge(
        role,
        "Lambda creates the gc function's network interfaces in the Fluss cluster's subnets "
        "with its role: new interfaces have ids not known in advance (network-interface/*), "
        "and EC2's DescribeNetworkInterfaces and DescribeSubnets have no resource-level "
        "permissions.",
        iam5(
            "Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*"
        ),
        iam5("Resource::*"),
    )
