"""boto3 clients for the embedded runtime (DynamoDB Local needs no real credentials)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LOCAL_REGION = "us-east-1"


def local_dynamodb_client(endpoint_url: str, *, pool_size: int = 32) -> DynamoDBClient:
    """A client for DynamoDB Local: fixed dummy credentials, a pool for many threads."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=LOCAL_REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - DynamoDB Local accepts any credentials
        # No client-side parameter validation, as the functions' clients (runtime.py):
        # DynamoDB Local validates every request as DynamoDB does.
        config=Config(
            max_pool_connections=pool_size, retries={"mode": "standard"}, parameter_validation=False
        ),
    )
