"""The native keys as a strategy reads them: where an arriving key names a native manifest,
and the folders of a lineage under ``snapshots/{stream}/{partition}/`` (``snapledger.
layout``). Pure: the native strategy (``strategies/native.py``) and the kafka-streams one
(``strategies/kafka_streams.py``) inherit ``NativeKeys``.
"""

from __future__ import annotations

from snapledger import layout as keys
from snapledger.errors import InvalidKeyError
from snapledger.layouts.strategy import Refused, SnapshotFolder

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


def native_folder(stream: str, partition: int, prefix: str) -> SnapshotFolder | None:
    """The native snapshot folder ``prefix`` of the lineage holds, or None (not one)."""
    try:
        location = keys.parse_snapshot_prefix(prefix)
    except InvalidKeyError:
        return None
    if (location.stream, location.partition) != (stream, partition):
        return None
    return SnapshotFolder(prefix, location.lsn, location.snapshot_id, prefix + keys.MANIFEST_NAME)
