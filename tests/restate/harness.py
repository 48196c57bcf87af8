"""The Restate cluster the tests run: ``snapledger.local.restate_cluster`` (shared with
``make demo-restate``), under the names the tests use."""

from __future__ import annotations

from snapledger.local.restate_cluster import (
    BUCKET,
    CLUSTER_NAME,
    NODE_NAME,
    PREFIX,
    RESTATE_VERSION,
    CreatedSnapshot,
    RestateCluster,
    RestateHarnessError,
    S3Object,
)

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
