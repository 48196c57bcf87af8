"""Shareable Lambda console test events, from the JSON files under ``events/``.

The Lambda console keeps shareable test events as one schema per function in the
EventBridge schema registry ``lambda-testevent-schemas``: an OpenAPI 3 document named
``_{function name}-schema`` whose ``components.examples`` holds the events by name. The
console creates that registry the first time anyone shares an event in a region; a custom
resource creates it here if it is missing and leaves it in place on teardown (other
functions' events may live in it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Fn, Stack
from aws_cdk import aws_eventschemas as eventschemas
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra import names

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is an int in Python
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


@dataclass(frozen=True, slots=True)
class ConsoleEvent:
    """One example event: ``events/{function}-{name}.json``."""

    function: str
    name: str
    body: dict[str, Any]


def load_console_events(events_dir: Path, functions: tuple[str, ...]) -> list[ConsoleEvent]:
    """Read ``{function}-{example}.json`` files; a file naming no known function is an error."""
    found: list[ConsoleEvent] = []
    if not events_dir.is_dir():
        return found
    for path in sorted(events_dir.glob("*.json")):
        function, sep, example = path.stem.partition("-")
        if not sep or not example:
            raise ValueError(f"{path}: name console events '{{function}}-{{example}}.json'")
        if function not in functions:
            raise ValueError(f"{path}: {function!r} is not one of the functions {functions}")
        body = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(body, dict):
            raise ValueError(f"{path}: a test event must be a JSON object")
        found.append(ConsoleEvent(function=function, name=example, body=body))
    return found


def console_event_schema(examples: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The OpenAPI 3 document the Lambda console reads shareable events from."""
    properties: dict[str, dict[str, str]] = {}
    for body in examples.values():
        for key, value in body.items():
            properties.setdefault(key, {"type": _json_type(value)})
    return {
        "openapi": "3.0.0",
        "info": {"version": "1.0.0", "title": "Event"},
        "paths": {},
        "components": {
            "schemas": {"Event": {"type": "object", "properties": properties}},
            "examples": {name: {"value": body} for name, body in sorted(examples.items())},
        },
    }


def _json_type(value: object) -> str:
    for python_type, json_type in _JSON_TYPES:
        if isinstance(value, python_type):
            return json_type
    return "string"


class ConsoleTestEvents(Construct):
    """One ``AWS::EventSchemas::Schema`` per function that has example files."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.IFunction],
        events_dir: Path,
    ) -> None:
        super().__init__(scope, construct_id)
        by_function: dict[str, dict[str, dict[str, Any]]] = {}
        for event in load_console_events(events_dir, tuple(functions)):
            by_function.setdefault(event.function, {})[event.name] = event.body
        self.schemas: dict[str, eventschemas.CfnSchema] = {}
        if not by_function:
            return
        registry = self._build_registry()
        for function_name, examples in sorted(by_function.items()):
            schema = self._build_schema(functions[function_name], function_name, examples)
            schema.node.add_dependency(registry)
            self.schemas[function_name] = schema

    def _build_registry(self) -> cr.AwsCustomResource:
        registry_arn = Stack.of(self).format_arn(
            service="schemas", resource="registry", resource_name=names.LAMBDA_TEST_EVENT_REGISTRY
        )
        create = cr.AwsSdkCall(
            service="schemas",
            action="CreateRegistry",
            parameters={
                "RegistryName": names.LAMBDA_TEST_EVENT_REGISTRY,
                "Description": "Lambda console shareable test events",
            },
            physical_resource_id=cr.PhysicalResourceId.of(names.LAMBDA_TEST_EVENT_REGISTRY),
            # Already there (the console, or another stack, made it): nothing to do.
            ignore_error_codes_matching="ConflictException",
        )
        registry = cr.AwsCustomResource(
            self,
            "Registry",
            on_create=create,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["schemas:CreateRegistry"], resources=[registry_arn])]
            ),
            install_latest_aws_sdk=False,
        )
        return registry

    def _build_schema(
        self,
        function: lambda_.IFunction,
        function_name: str,
        examples: dict[str, dict[str, Any]],
    ) -> eventschemas.CfnSchema:
        return eventschemas.CfnSchema(
            self,
            f"{names.function_construct_id(function_name)}Schema",
            registry_name=names.LAMBDA_TEST_EVENT_REGISTRY,
            schema_name=Fn.join("", ["_", function.function_name, "-schema"]),
            type="OpenApi3",
            description=f"Console test events for snapledger {function_name}",
            content=json.dumps(console_event_schema(examples)),
        )
