"""snapledger's client library: write snapshots as the registry expects them, read them back.

Install it with the extra ``snapledger[client]`` (pyarrow, botocore[crt]). The Lambda
functions never import it: pyarrow is imported by the client's own modules only, on first
use of a name below (``import snapledger.client`` alone imports neither pyarrow nor boto3).

```python
from snapledger.client import Snapledger, SnapshotReader, SnapshotWriter

writer = SnapshotWriter("s3://bucket/root", "orders", 3, producer="orders-app")
written = writer.write(lsn=18213, epoch=7, data=[("k1", b"v1"), ("k2", None)],
                       offsets={"orders-3": 18213})
table = SnapshotReader("s3://bucket/root").open(written.prefix).to_arrow()

with Snapledger.for_stack("Snapledger") as registry:   # or snapledger.local.connect()
    head = registry.latest("orders", 3)["head"]
```
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snapledger.client.control import RequestRefusedError, Snapledger
    from snapledger.client.errors import (
        PointerRefusedError,
        SnapshotCorruptError,
        SnapshotFormatError,
    )
    from snapledger.client.opened_snapshot import OpenedSnapshot
    from snapledger.client.reader import SnapshotReader
    from snapledger.client.writer import SnapshotWriter, WrittenSnapshot

#: Exported name → the module that defines it (imported on first access).
_EXPORTS = {
    "Snapledger": "snapledger.client.control",
    "RequestRefusedError": "snapledger.client.control",
    "SnapshotWriter": "snapledger.client.writer",
    "WrittenSnapshot": "snapledger.client.writer",
    "SnapshotReader": "snapledger.client.reader",
    "OpenedSnapshot": "snapledger.client.opened_snapshot",
    "PointerRefusedError": "snapledger.client.errors",
    "SnapshotCorruptError": "snapledger.client.errors",
    "SnapshotFormatError": "snapledger.client.errors",
}

__all__ = [
    "OpenedSnapshot",
    "PointerRefusedError",
    "RequestRefusedError",
    "Snapledger",
    "SnapshotCorruptError",
    "SnapshotFormatError",
    "SnapshotReader",
    "SnapshotWriter",
    "WrittenSnapshot",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
