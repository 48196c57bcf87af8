"""Ports: the small interfaces the services need from the outside world, by family:
objects (``ports.objects``), the ledger's logs and views (``ports.ledger``), jobs
(``ports.jobs``) and queues (``ports.queues``). Every name is importable from here too.

Adapters implement them for AWS (DynamoDB, S3, EMR Serverless) and for the embedded
local runtime (DynamoDB Local, ``file://``, a local SparkSession).
"""

from __future__ import annotations

from snapledger.ports.jobs import (
    FoundJobRun,
    JobRunner,
    JobRunSpec,
    JobRunStatus,
    JobStore,
)
from snapledger.ports.ledger import (
    MAX_PAGE,
    Ledger,
    LedgerReader,
    LedgerStore,
    LineageIndex,
    LogWrite,
    Page,
    PolicyStore,
    SegmentStore,
    StreamLogStore,
)
from snapledger.ports.objects import (
    MAX_KEYS_PER_REQUEST,
    DeleteResult,
    ObjectHolds,
    ObjectInfo,
    ObjectStore,
    chunked,
)
from snapledger.ports.queues import (
    QueuedManifest,
    RegistrationQueue,
    ShardQueue,
)

__all__ = [
    "MAX_KEYS_PER_REQUEST",
    "MAX_PAGE",
    "DeleteResult",
    "FoundJobRun",
    "JobRunSpec",
    "JobRunStatus",
    "JobRunner",
    "JobStore",
    "Ledger",
    "LedgerReader",
    "LedgerStore",
    "LineageIndex",
    "LogWrite",
    "ObjectHolds",
    "ObjectInfo",
    "ObjectStore",
    "Page",
    "PolicyStore",
    "QueuedManifest",
    "RegistrationQueue",
    "SegmentStore",
    "ShardQueue",
    "StreamLogStore",
    "chunked",
]
