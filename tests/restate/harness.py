"""The Restate cluster the tests run: ``snapledger.local.restate_cluster`` (shared with
``make demo-restate``) and what it talks to the server through, under the names the tests
use."""

from __future__ import annotations

from snapledger.local.restate_bucket import S3Object
from snapledger.local.restate_cluster import RestateCluster
from snapledger.local.restate_config import (
    BUCKET,
    CLUSTER_NAME,
    NODE_NAME,
    PREFIX,
    RESTATE_VERSION,
    RestateHarnessError,
)
from snapledger.local.restatectl import CreatedSnapshot

RestateHarness = RestateCluster

__all__ = [
    "BUCKET",
    "CLUSTER_NAME",
    "NODE_NAME",
    "PREFIX",
    "RESTATE_VERSION",
    "CreatedSnapshot",
    "RestateHarness",
    "RestateHarnessError",
    "S3Object",
]
