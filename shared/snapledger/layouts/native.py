"""The native layout: snapledger's own keys, manifest and pointer.

``snapshots/{stream}/{partition}/{lsn:020d}-{ulid}/... _manifest.json`` (``snapledger.
layout``); registration checks the manifest (``services/manifest_checks.py``: schema, every
file present with its size, checksums, the ``kv-parquet`` columns); snapledger owns
``latest.json``; GC reads and repairs ``latest.json`` and ``generation.json`` and keeps
what they name; a consumer boots from ``latest.json`` (``snapledger.client``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from snapledger import layout as keys
from snapledger.errors import InvalidKeyError
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts.strategy import (
    Placed,
    Refused,
    RestorableUnlessBroken,
    SnapshotFolder,
)

if TYPE_CHECKING:
    from snapledger.models.commands import RegisterSnapshot
    from snapledger.models.manifest import ManifestV1
    from snapledger.ports import ObjectHolds, ObjectStore
    from snapledger.services.gc_steps import LineageSteps, StepsContext

NOT_A_MANIFEST = f"not a snapshot manifest ({keys.SNAPSHOTS}/.../{keys.MANIFEST_NAME})"


def native_location(key: str) -> keys.SnapshotLocation | Refused:
    """Where a key under ``snapshots/`` names a native manifest, or why it does not (an
    object named ``_manifest.json`` there whose key does not parse is a manifest refused:
    registration records it)."""
    if not (key.startswith(f"{keys.SNAPSHOTS}/") and key.endswith(f"/{keys.MANIFEST_NAME}")):
        return Refused(NOT_A_MANIFEST, manifest=False)
    try:
        return keys.parse_manifest_key(key)
    except InvalidKeyError as exc:
        return Refused(str(exc), manifest=True)


class NativeKeys:
    """The native keys of a strategy's ``stream``: a strategy class that keeps its
    snapshots under ``snapshots/`` inherits them (native, kafka-streams)."""

    __slots__ = ()
    stream: str

    @property
    def stream_root(self) -> str:
        return f"{keys.SNAPSHOTS}/{self.stream}/"

    def root(self, partition: int) -> str:
        return keys.lineage_snapshots_prefix(self.stream, partition)

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        return native_folder(self.stream, partition, prefix)


@dataclass(frozen=True, slots=True)
class NativeLayout(NativeKeys, RestorableUnlessBroken):
    """snapledger's own: ``snapshots/{stream}/{partition}/{lsn:020d}-{ulid}/_manifest.json``."""

    stream: str
    name: LayoutName = "native"
    owner: PointerOwner = "snapledger"
    manifest_name: str = keys.MANIFEST_NAME
    boot: str = "snapledger.client: latest.json (one GET), then the snapshot's files"

    def register_command(
        self, placed: Placed, store: ObjectStore, holds: ObjectHolds | None
    ) -> tuple[RegisterSnapshot, ManifestV1 | None]:
        from snapledger.services.manifest_checks import command_for

        return command_for(placed.location, placed.key, store, holds)

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        from snapledger.services.gc_steps import NativeSteps

        return NativeSteps(context)


def native_folder(stream: str, partition: int, prefix: str) -> SnapshotFolder | None:
    """The native snapshot folder ``prefix`` of the lineage holds, or None (not one)."""
    try:
        location = keys.parse_snapshot_prefix(prefix)
    except InvalidKeyError:
        return None
    if (location.stream, location.partition) != (stream, partition):
        return None
    return SnapshotFolder(prefix, location.lsn, location.snapshot_id, prefix + keys.MANIFEST_NAME)
