"""The S3 bucket the local Restate cluster (restate_cluster.py) writes its snapshots to, as
its tests and demo read it: a boto3 client on the endpoint (moto's credentials), the objects
under a prefix, one object's bytes or JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3

from snapledger.local.restate_config import ACCESS_KEY, REGION, SECRET_KEY


@dataclass(frozen=True)
class S3Object:
    key: str
    size: int
    etag: str


class SnapshotBucket:
    """``bucket`` at the S3 endpoint ``endpoint``; the cluster's snapshots under ``prefix``."""

    def __init__(self, endpoint: str, bucket: str, prefix: str) -> None:
        self.endpoint = endpoint
        self.bucket = bucket
        self.prefix = prefix
        self._s3: Any = None

    @property
    def s3(self) -> Any:
        """A boto3 S3 client on the endpoint, made on first use."""
        if self._s3 is None:
            self._s3 = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                region_name=REGION,
                aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=SECRET_KEY,
            )
        return self._s3

    def objects(self, prefix: str | None = None) -> list[S3Object]:
        """The bucket's objects under ``prefix`` (default: the cluster's prefix)."""
        under = self.prefix + "/" if prefix is None else prefix
        objects: list[S3Object] = []
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=under)
        for page in pages:
            objects.extend(
                S3Object(key=item["Key"], size=item["Size"], etag=item["ETag"])
                for item in page.get("Contents", [])
            )
        return objects

    def read_object(self, key: str, *, byte_range: str | None = None) -> bytes:
        extra = {"Range": byte_range} if byte_range else {}
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key, **extra)["Body"].read())

    def read_json(self, key: str) -> Any:
        return json.loads(self.read_object(key))
