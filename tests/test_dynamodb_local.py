from __future__ import annotations

import boto3
import pytest

from snapledger.adapters.table_definition import create_table_request

pytestmark = pytest.mark.ddblocal


def test_dynamodb_local_creates_the_ledger_table_from_the_shared_definition(dynamodb_local):
    # Given the engine, when the table is created from the one definition
    client = boto3.client("dynamodb", endpoint_url=dynamodb_local.endpoint_url)
    client.create_table(**create_table_request("t_definition"))
    # Then it has the keys and the sparse index the ledger relies on
    table = client.describe_table(TableName="t_definition")["Table"]
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["pk", "sk"]
    assert table["GlobalSecondaryIndexes"][0]["IndexName"] == "by_kind"
