"""Ports: the small interfaces the services need from the outside world, by family:
objects (``ports.objects``), the ledger's logs and views (``ports.ledger``), jobs
(``ports.jobs``) and queues (``ports.queues``). Every name is importable from here too,
loading only its own family (``__getattr__``): a function that needs the ledger's ports does
not create the classes of the object store's and the queues' (its cold start).

Adapters implement them for AWS (DynamoDB, S3, EMR Serverless) and for the embedded
local runtime (DynamoDB Local, ``file://``, a local SparkSession).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        ProducerOffsetsStore,
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

#: Each name → the family module that defines it.
_FAMILY = {
    "DeleteResult": "objects",
    "FoundJobRun": "jobs",
    "JobRunSpec": "jobs",
    "JobRunStatus": "jobs",
    "JobRunner": "jobs",
    "JobStore": "jobs",
    "Ledger": "ledger",
    "LedgerReader": "ledger",
    "LedgerStore": "ledger",
    "LineageIndex": "ledger",
    "LogWrite": "ledger",
    "MAX_KEYS_PER_REQUEST": "objects",
    "MAX_PAGE": "ledger",
    "ObjectHolds": "objects",
    "ObjectInfo": "objects",
    "ObjectStore": "objects",
    "Page": "ledger",
    "PolicyStore": "ledger",
    "ProducerOffsetsStore": "ledger",
    "QueuedManifest": "queues",
    "RegistrationQueue": "queues",
    "SegmentStore": "ledger",
    "ShardQueue": "queues",
    "StreamLogStore": "ledger",
    "chunked": "objects",
}

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
    "ProducerOffsetsStore",
    "QueuedManifest",
    "RegistrationQueue",
    "SegmentStore",
    "ShardQueue",
    "StreamLogStore",
    "chunked",
]


def __getattr__(name: str) -> Any:
    family = _FAMILY.get(name)
    if family is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{family}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_FAMILY])
