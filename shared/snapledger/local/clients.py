"""boto3 clients for the embedded runtime (DynamoDB Local and the local S3 endpoint, moto's
server, need no real credentials)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

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


def local_s3_client(endpoint_url: str, *, pool_size: int = 32) -> S3Client:
    """A client for the local S3 endpoint (``snapledger local up --s3-port``): path-style
    addressing on loopback, fixed dummy credentials."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=LOCAL_REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - moto's server accepts any credentials
        config=Config(
            max_pool_connections=pool_size,
            retries={"mode": "standard"},
            s3={"addressing_style": "path"},
        ),
    )


def ensure_bucket(client: S3Client, bucket: str) -> None:
    """Create ``bucket`` unless it exists (idempotent)."""
    try:
        client.create_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in (
            "BucketAlreadyOwnedByYou",
            "BucketAlreadyExists",
        ):
            raise
