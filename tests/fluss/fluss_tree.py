"""A Fluss 0.7 bucket snapshot written as Fluss writes it (its private files, shared SSTs,
then ``_METADATA`` with every path absolute), into a ``file://`` store: for the tests
that need one without a cluster. The shape is the one the real cluster wrote
(tests/fluss/test_fluss_cluster.py checks it against a real cluster)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

DB, TABLE, TABLE_ID = "shop", "orders", 7
PREFIX = f"fluss/kv/{DB}/{TABLE}-{TABLE_ID}"
STREAM = "orders-kv"


@dataclass
class FlussBucket:
    """One bucket's remote folder in ``store`` (a FileObjectStore): snapshots written in turn."""

    store: object
    bucket: int = 0
    prefix: str = PREFIX
    table_id: int = TABLE_ID
    shared: dict[str, bytes] = field(default_factory=dict)  # name -> content, in shared/

    @property
    def root(self) -> str:
        return f"{self.prefix}/{self.bucket}/"

    def absolute(self, key: str) -> str:
        return f"{self.store.root}/{key}"  # type: ignore[attr-defined]

    def new_sst(self, content: bytes) -> str:
        name = str(uuid.uuid4())
        self.store.put(f"{self.root}shared/{name}", content)  # type: ignore[attr-defined]
        self.shared[name] = content
        return name

    def snapshot(self, number: int, ssts: list[str], **fields) -> str:
        """snap-{number} using the shared SSTs named, with 3 private files: its _METADATA key."""
        folder = f"{self.root}snap-{number}/"
        private = []
        for local, content in (
            ("CURRENT", b"MANIFEST-000004\n"),
            ("MANIFEST-000004", b"m" * 90),
            ("OPTIONS-000007", b"o" * 300),
        ):
            key = folder + str(uuid.uuid4())
            self.store.put(key, content)  # type: ignore[attr-defined]
            private.append(
                {
                    "kv_file_handle": {"path": self.absolute(key), "size": len(content)},
                    "local_path": local,
                }
            )
        shared = [
            {
                "kv_file_handle": {
                    "path": self.absolute(f"{self.root}shared/{name}"),
                    "size": len(self.shared[name]),
                },
                "local_path": f"{i:06d}.sst",
            }
            for i, name in enumerate(ssts)
        ]
        metadata = {
            "version": 1,
            "table_id": self.table_id,
            "bucket_id": self.bucket,
            "snapshot_id": number,
            "snapshot_location": self.absolute(folder.rstrip("/")),
            "kv_snapshot_handle": {
                "shared_file_handles": shared,
                "private_file_handles": private,
                "snapshot_incremental_size": 1,
            },
        } | fields
        key = folder + "_METADATA"
        self.store.put(key, json.dumps(metadata).encode())  # type: ignore[attr-defined]
        return key


class MemoryNodes:
    """ZooKeeper's snapshot nodes of one table, in memory (FlussSnapshotNodes), with the
    order of every call."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, int], set[int]] = {}
        self.calls: list[tuple[str, int, int]] = []

    def add(self, table_id: int, bucket: int, number: int) -> None:
        self.nodes.setdefault((table_id, bucket), set()).add(number)

    def listed(self, table_id: int, bucket: int) -> set[int]:
        self.calls.append(("listed", table_id, bucket))
        return set(self.nodes.get((table_id, bucket), set()))

    def drop(self, table_id: int, bucket: int, snapshot_id: int) -> bool:
        self.calls.append(("drop", bucket, snapshot_id))
        listed = self.nodes.get((table_id, bucket), set())
        if snapshot_id not in listed:
            return False
        listed.discard(snapshot_id)
        return True
