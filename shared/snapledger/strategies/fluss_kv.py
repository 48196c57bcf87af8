"""The Fluss KV layout's strategy: a Fluss 0.7 table's KV snapshots under its own prefix.

``{remote}/kv/{db}/{table}-{table_id}/{bucket}/snap-{id}/_METADATA``, the snapshot's
private files beside it and the bucket's ``shared/`` SSTs (``layouts/fluss_keys.py``).
Registration reads ``_METADATA`` and lists the files it names, reading none of their data
(``services/fluss_snapshots.py``); Fluss owns its pointer (ZooKeeper's list of completed
snapshots); GC keeps what ZooKeeper's latest is, drops the node of what its policy expires
before its files, and keeps the files of what ZooKeeper lists that the ledger has not
registered (``services/fluss_gc.py``); a tablet server restores as Fluss always does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from snapledger import layout as native
from snapledger.errors import InvalidRequestError
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts import fluss_keys as fluss
from snapledger.layouts.strategy import Placed, Refused, RestorableUnlessBroken, SnapshotFolder
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds, ObjectStore
from snapledger.ports.producers import FlussSnapshotNodes
from snapledger.services import fluss_snapshots
from snapledger.services.fluss_gc import NO_ZOOKEEPER, FlussSteps
from snapledger.services.gc_steps import LineageSteps, StepsContext


@dataclass(frozen=True)
class FlussKvLayout(RestorableUnlessBroken):
    """A Fluss table's KV folder (its prefix) holding one stream: a partition per bucket."""

    stream: str
    prefix: str
    #: Fluss's snapshot nodes in ZooKeeper (None: GC collects none of its buckets).
    nodes: FlussSnapshotNodes | None = field(default=None, compare=False)
    #: Fluss's ``table.log.ttl`` for the table, in hours (its default: 7 days): heal falls
    #: back only to a snapshot whose log_offset the log still holds.
    log_ttl_hours: float = 168.0
    name: LayoutName = fluss.NAME
    owner: PointerOwner = fluss.POINTER_OWNER
    manifest_name: str = fluss.METADATA_NAME
    boot: str = (
        "Fluss's own restore: a tablet server downloads the latest snapshot ZooKeeper lists "
        "and replays the log after its log_offset (docs/fluss.md)"
    )

    @property
    def table(self) -> fluss.FlussTable:
        return fluss.table_of_prefix(self.prefix)

    @property
    def stream_root(self) -> str:
        return f"{self.prefix}/"

    def root(self, partition: int) -> str:
        return f"{self.prefix}/{partition}/"

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        name = prefix.removeprefix(self.root(partition)).removesuffix("/")
        number = fluss.folder_number(name) if "/" not in name else None
        if number is None:
            return None
        return SnapshotFolder(prefix, number, f"snap-{number}", prefix + fluss.METADATA_NAME)

    def place(self, key: str) -> Placed | Refused | None:
        if not key.startswith(self.stream_root):
            return None
        found = fluss.parse_key(key, self.prefix)
        if found is None:
            return Refused(fluss.NOT_METADATA, manifest=False)
        if isinstance(found, str):
            return Refused(found, manifest=True)
        location = native.SnapshotLocation(
            self.stream, found.bucket, found.number, found.snapshot_id
        )
        return Placed(self, location, key)

    def register_command(
        self, placed: Placed, store: ObjectStore, holds: ObjectHolds | None
    ) -> tuple[RegisterSnapshot, ManifestV1 | None]:
        found = fluss.parse_key(placed.key, self.prefix)
        if not isinstance(found, fluss.FlussLocation):  # placed by ``place``: it parsed there
            raise InvalidRequestError(f"{placed.key!r} is no _METADATA under {self.prefix!r}")
        return fluss_snapshots.register_command(self.table, self.stream, found, store), None

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        if self.nodes is None:
            raise InvalidRequestError(NO_ZOOKEEPER)
        return FlussSteps(context, self.table, self.nodes, timedelta(hours=self.log_ttl_hours))
