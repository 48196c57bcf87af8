"""Restate snapshots written into a store the way Restate 1.7 writes them, without the server.

The documents start from the samples the real server wrote (``samples/``): only the
identity fields and the file list are changed. The server-backed tests (``harness.py``)
check the same behaviour against what the server writes itself.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.layouts import restate
from snapledger.ports import ObjectStore

SAMPLES = Path(__file__).parent / "samples"
PREFIX = "restate/prod-1"
STREAM = "payments"
FINGERPRINT = 7494310153217601364
SST_TAIL = (SAMPLES / "sst-footer.bin").read_bytes()


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / name).read_text())  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Written:
    location: restate.RestateLocation
    metadata: dict[str, Any]
    sst_keys: tuple[str, ...]

    @property
    def entry(self) -> dict[str, Any]:
        """Its entry in latest.json's ``retained_snapshots``."""
        return {
            "snapshot_id": self.location.snapshot_id,
            "min_applied_lsn": self.location.lsn,
            "created_at": self.metadata["created_at"],
            "path": self.location.path,
        }


def snapshot_id(n: int) -> str:
    return f"snap_{n:04d}Test{n}"


def write_restate_snapshot(
    store: ObjectStore,
    lsn: int,
    *,
    partition: int = 0,
    n: int | None = None,
    files: int = 2,
    prefix: str = PREFIX,
    cluster_name: str = "snapledger-test",
    fingerprint: int | None = FINGERPRINT,
    created_at: str = "2026-11-26T20:47:51.439Z",
    metadata: bool = True,
) -> Written:
    """One snapshot: ``files`` SSTs of 100-199 bytes ending in a real footer, then its
    ``metadata.json`` (unless ``metadata=False``: a failed upload)."""
    sid = snapshot_id(lsn if n is None else n)
    location = restate.RestateLocation(prefix, partition, lsn, sid)
    document = copy.deepcopy(sample("metadata.json"))
    template = document["files"][0]
    entries, keys = [], []
    for index in range(files):
        name = f"{index + 24:06d}.sst"
        body = bytes([index % 251]) * (100 + index) + SST_TAIL
        key = location.folder + name
        store.put(key, body)
        keys.append(key)
        entries.append({**template, "name": "/" + name, "size": len(body)})
    document.update(
        partition_id=partition,
        snapshot_id=sid,
        min_applied_lsn=lsn,
        cluster_name=cluster_name,
        cluster_fingerprint=fingerprint,
        created_at=created_at,
        files=entries,
    )
    if fingerprint is None:
        del document["cluster_fingerprint"]
    if metadata:
        store.put(location.metadata_key, json.dumps(document, indent=2).encode())
    return Written(location, document, tuple(keys))


def write_latest(
    store: ObjectStore, named: Written, retained: list[Written], *, prefix: str = PREFIX
) -> bytes:
    """Restate's latest.json for ``named``'s partition, retaining ``retained`` (newest first)."""
    document = copy.deepcopy(sample("latest.json"))
    document.update(
        partition_id=named.location.partition,
        snapshot_id=named.location.snapshot_id,
        min_applied_lsn=named.location.lsn,
        created_at=named.metadata["created_at"],
        path=named.location.path,
        cluster_fingerprint=named.metadata.get("cluster_fingerprint"),
        retained_snapshots=[w.entry for w in retained],
    )
    body = json.dumps(document, indent=2).encode()
    store.put(restate.latest_pointer_key(prefix, named.location.partition), body)
    return body
