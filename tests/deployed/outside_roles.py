"""Code that runs outside the stack (the CLI, the client) under a managed policy it outputs.

The client finds the functions as it does in AWS: ``cloudformation:DescribeStacks`` on the
stack (published here in moto with the synthesized ``Function*`` outputs, resolved), then
``lambda:InvokeFunction`` on the function. Both are authorized against the ARNs AWS checks
(the stack's id; ``arn:aws:lambda:...:function:{name}``), as ``iam_emulation`` does for the
other services; the invoked function then runs in-process under its own synthesized role
(``EmulatedDeployment.invoke``), since moto cannot run it without Docker.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock
from urllib.parse import unquote

from moto.awslambda.models import LambdaBackend
from moto.awslambda.responses import LambdaResponse
from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.responses import CloudFormationResponse

from infra.constants import FUNCTION_NAMES, STACK_NAME
from infra.names import function_output_key
from tests.deployed.deployment import EmulatedDeployment, _environment
from tests.deployed.iam_emulation import ACCOUNT, PARTITION, REGION, _Resource


def function_arn(name: str) -> str:
    return f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}"


def _lambda_resource(handler: LambdaResponse) -> str:
    marker = _Resource("*")
    marker.checks = []
    if handler._get_action() == "Invoke":
        name = unquote(handler.path.rsplit("/", 2)[-2])
        marker.checks = [("lambda:InvokeFunction", name if ":" in name else function_arn(name))]
    return marker


def _cloudformation_resource(handler: CloudFormationResponse) -> str:
    marker = _Resource("*")
    marker.checks = []
    name = handler._get_param("StackName")
    if handler._get_action() == "DescribeStacks" and name:
        try:
            arn = handler.cloudformation_backend.get_stack(name).stack_id
        except ValidationError:  # no such stack: AWS checks the ARN it would have
            arn = f"arn:{PARTITION}:cloudformation:{REGION}:{ACCOUNT}:stack/{name}/unknown"
        marker.checks = [("cloudformation:DescribeStacks", arn)]
    return marker


@contextmanager
def published(app: EmulatedDeployment) -> Iterator[str]:
    """Inside ``mock_aws`` + ``enforced_iam``: the stack (its ``Function*`` outputs) in
    CloudFormation, the functions invocable, both authorized on their ARNs. Yields the
    stack's id (what ``AWS::StackId`` resolves to)."""
    synthesized = app.synth.template_json["Outputs"]
    outputs = {
        function_output_key(name): app.resolve(synthesized[function_output_key(name)]["Value"])
        for name in FUNCTION_NAMES
    }
    by_physical = {physical: name for name, physical in _names(app).items()}
    template = {
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    with warnings.catch_warnings():  # moto creates no WaitConditionHandle, and says so
        warnings.simplefilter("ignore", UserWarning)
        stack_id = app.admin.client("cloudformation").create_stack(
            StackName=STACK_NAME, TemplateBody=json.dumps(template)
        )["StackId"]
    app.resolve.refs["AWS::StackId"] = stack_id
    for name in FUNCTION_NAMES:
        key = (app.function_logical_id(name), "Arn")
        app.resolve.attributes[key] = function_arn(_names(app)[name])

    def invoke(_backend: Any, function_name: str, _q: Any, body: Any, *_: Any) -> bytes:
        name = by_physical[function_name.rsplit(":", 1)[-1]]
        return json.dumps(app.invoke(name, json.loads(body or b"{}"))).encode()

    with (
        mock.patch.object(LambdaResponse, "_determine_resource", _lambda_resource, create=True),
        mock.patch.object(
            CloudFormationResponse, "_determine_resource", _cloudformation_resource, create=True
        ),
        mock.patch.object(LambdaBackend, "invoke", invoke),
    ):
        yield stack_id


def _names(app: EmulatedDeployment) -> dict[str, str]:
    """Each function's physical name, as the template's ``Ref`` resolves it."""
    return {name: app.resolve({"Ref": app.function_logical_id(name)}) for name in FUNCTION_NAMES}


def output_policy(app: EmulatedDeployment, output: str) -> list[dict[str, Any]]:
    """The statements (resolved) of the managed policy whose ARN the stack outputs as
    ``output``."""
    template = app.synth.template_json
    logical_id = template["Outputs"][output]["Value"]["Ref"]
    document = app.resolve(template["Resources"][logical_id]["Properties"]["PolicyDocument"])
    return list(document["Statement"])


@contextmanager
def acting_as(credentials: dict[str, str]) -> Iterator[None]:
    """The process environment of a pod whose role has ``credentials`` (and the region)."""
    with _environment({**credentials, "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}):
        yield
