"""The ledger table, built from ``snapledger.adapters.table_definition`` (one source of truth)."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from snapledger.adapters.table_definition import TTL_ATTRIBUTE, create_table_request

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_STREAM_VIEWS = {
    "NEW_IMAGE": dynamodb.StreamViewType.NEW_IMAGE,
    "OLD_IMAGE": dynamodb.StreamViewType.OLD_IMAGE,
    "NEW_AND_OLD_IMAGES": dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    "KEYS_ONLY": dynamodb.StreamViewType.KEYS_ONLY,
}
_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}


class LedgerTable(Construct):
    """On-demand, point-in-time recovery, stream on (for the events Pipe), TTL on.

    The table name is left to CloudFormation so two stacks can share an account; the
    functions and the CLI find it through the environment and the stack outputs.
    """

    def __init__(self, scope: Construct, construct_id: str, *, deletion_protection: bool) -> None:
        super().__init__(scope, construct_id)
        # The name passed here is a placeholder: only the shape of the request is used.
        self.definition: dict[str, Any] = create_table_request("unused")
        self.table = self._build_table(deletion_protection)
        self._build_indexes()

    def _attribute(self, name: str) -> dynamodb.Attribute:
        types = {
            item["AttributeName"]: item["AttributeType"]
            for item in self.definition["AttributeDefinitions"]
        }
        return dynamodb.Attribute(name=name, type=_ATTRIBUTE_TYPES[types[name]])

    def _key_attributes(
        self, key_schema: list[dict[str, str]]
    ) -> tuple[dynamodb.Attribute, dynamodb.Attribute | None]:
        by_role = {item["KeyType"]: item["AttributeName"] for item in key_schema}
        sort_key = by_role.get("RANGE")
        return self._attribute(by_role["HASH"]), (self._attribute(sort_key) if sort_key else None)

    def _build_table(self, deletion_protection: bool) -> dynamodb.Table:
        if self.definition["BillingMode"] != "PAY_PER_REQUEST":
            raise ValueError("the ledger table is on-demand; update LedgerTable to change that")
        partition_key, sort_key = self._key_attributes(self.definition["KeySchema"])
        stream = self.definition["StreamSpecification"]
        return dynamodb.Table(
            self,
            "Ledger",
            partition_key=partition_key,
            sort_key=sort_key,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=deletion_protection,
            stream=_STREAM_VIEWS[stream["StreamViewType"]] if stream["StreamEnabled"] else None,
            time_to_live_attribute=TTL_ATTRIBUTE,
            removal_policy=RemovalPolicy.RETAIN if deletion_protection else RemovalPolicy.DESTROY,
        )

    def _build_indexes(self) -> None:
        for index in self.definition.get("GlobalSecondaryIndexes", []):
            partition_key, sort_key = self._key_attributes(index["KeySchema"])
            projection = index["Projection"]
            self.table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=partition_key,
                sort_key=sort_key,
                projection_type=_PROJECTIONS[projection["ProjectionType"]],
                non_key_attributes=projection.get("NonKeyAttributes"),
            )
