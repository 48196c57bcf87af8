"""The JSON Schema of every ledger event type (``docs/events/``, from the event models) in
an EventBridge schema registry, so subscribers can discover what ``detail`` holds."""

from __future__ import annotations

from aws_cdk import aws_eventschemas as eventschemas
from constructs import Construct

from infra import names
from snapledger.models.event_schema import event_schema_documents

# EventBridge's schema type for JSON Schema documents (the other is "OpenApi3").
SCHEMA_TYPE = "JSONSchemaDraft4"


def build_schema_registry(
    scope: Construct, registry_name: str
) -> tuple[eventschemas.CfnRegistry, list[eventschemas.CfnSchema]]:
    """The registry ``registry_name`` (construct ``Schemas`` in ``scope``) and one schema in
    it per event type, named ``{ledger event source}@{event type}``."""
    registry = eventschemas.CfnRegistry(
        scope,
        "Schemas",
        registry_name=registry_name,
        description="JSON Schemas of the snapledger ledger events on the bus (docs/events/)",
    )
    schemas = [
        eventschemas.CfnSchema(
            scope,
            f"{event_type}Schema",
            registry_name=registry.attr_registry_name,
            schema_name=f"{names.LEDGER_EVENT_SOURCE}@{event_type}",
            type=SCHEMA_TYPE,
            content=document,
            description=f"snapledger {event_type}: docs/events/{event_type}.schema.json",
        )
        for event_type, document in event_schema_documents().items()
    ]
    return registry, schemas
