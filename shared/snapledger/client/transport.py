"""How the client reaches the functions: ``Transport``, and ``AwsTransport`` for a deployment.

The client (and the CLI, through it) sends the payloads the console sends (docs/console.md),
so the client, the CLI, the console and the functions share one validation and one set of
answers. The local runtime's transport, the same handlers in-process, is
``snapledger.local.transport.LocalTransport`` (``snapledger.local.connect()``): the client
never imports the local runtime, the local runtime builds on the client.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from snapledger.errors import SnapledgerError
from snapledger.stack_names import OUTPUT_FUNCTION_PREFIX, STACK_NAME

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

#: Where the region comes from when none is given, in order (boto3 reads only the second).
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
NO_REGION = (
    "no AWS region: pass --region (region= in Snapledger.for_stack), export AWS_REGION "
    "or AWS_DEFAULT_REGION, or set region in your AWS profile"
)
#: Named once with the stack (snapledger/stack_names.py); re-exported for the CLI.
FUNCTION_OUTPUT_PREFIX = OUTPUT_FUNCTION_PREFIX


class TransportError(SnapledgerError):
    """The client could not reach the deployment or the local runtime."""


class Transport(Protocol):
    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send ``payload`` to ``function`` and return its answer."""
        ...


@dataclass
class AwsTransport:
    """Invokes the deployed functions, found through the stack's outputs."""

    stack_name: str = STACK_NAME
    region: str | None = None

    def __post_init__(self) -> None:
        self._functions: dict[str, str] | None = None
        self._lambda: LambdaClient | None = None

    def resolved_region(self) -> str:
        """The region given, else ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the AWS profile's."""
        for candidate in (self.region, *(os.environ.get(name) for name in REGION_VARIABLES)):
            if candidate:
                return candidate
        try:
            configured = boto3.session.Session().region_name
        except BotoCoreError as exc:  # a broken profile or config file
            raise TransportError(f"{NO_REGION} ({exc})") from exc
        if not configured:
            raise TransportError(NO_REGION)
        return configured

    def functions(self) -> dict[str, str]:
        if self._functions is None:
            region = self.resolved_region()
            try:
                stacks = boto3.client("cloudformation", region_name=region).describe_stacks(
                    StackName=self.stack_name
                )["Stacks"]
            except (ClientError, BotoCoreError) as exc:
                raise TransportError(
                    f"could not read the stack {self.stack_name!r} in {region}: {exc}. "
                    "Deploy it with `cdk deploy`, pass --stack and --region, "
                    "check your AWS credentials, or use --local for the local runtime"
                ) from exc
            outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
            self._functions = {
                key.removeprefix(FUNCTION_OUTPUT_PREFIX).lower(): value
                for key, value in outputs.items()
                if key.startswith(FUNCTION_OUTPUT_PREFIX)
            }
        return self._functions

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        names = self.functions()
        key = function.replace("_", "").lower()
        if key not in names:
            raise TransportError(
                f"the stack {self.stack_name!r} has no output for the {function} function: "
                "redeploy with this version of snapledger"
            )
        if self._lambda is None:
            self._lambda = boto3.client("lambda", region_name=self.resolved_region())
        try:
            response = self._lambda.invoke(
                FunctionName=names[key], Payload=json.dumps(payload).encode()
            )
        except (ClientError, BotoCoreError) as exc:
            raise TransportError(f"could not invoke {names[key]}: {exc}") from exc
        body = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            message = body.get("errorMessage") if isinstance(body, dict) else body
            raise TransportError(f"{function} failed: {message} (see its CloudWatch logs)")
        if not isinstance(body, dict):
            raise TransportError(f"{function} answered {body!r}, not a JSON object")
        return body
