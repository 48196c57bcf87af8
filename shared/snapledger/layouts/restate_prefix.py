"""A Restate cluster's prefix, as the services read its lineages: Restate 1.7's keys under it.

``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/*.sst + metadata.json`` and Restate's own
``{prefix}/{partition}/latest.json`` (``layouts/restate_keys.py``). ``RestatePrefix`` is
what the Restate services (``services/restate_snapshots.py``, ``restate_heal.py``,
``restate_pointer.py``, ``restate_gc.py``) are given; the strategy that binds them
(``strategies/restate.py``: ``RestateLayout``) is one. A configured prefix is checked by
the layout map (``layouts/layout_map.py``, with the registry's ``own_prefix``). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapledger.layouts import restate_keys as restate
from snapledger.layouts.strategy import SnapshotFolder


@dataclass(frozen=True, slots=True)
class RestatePrefix:
    """A stream's Restate prefix: its partitions' folders and pointers."""

    stream: str
    prefix: str  # normalized (``restate.normalize_prefix``)

    @property
    def stream_root(self) -> str:
        return f"{self.prefix}/"

    def root(self, partition: int) -> str:
        return restate.partition_prefix(self.prefix, partition)

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        parsed = restate.parse_snapshot_object_key(prefix + restate.METADATA_NAME, self.prefix)
        if parsed is None or parsed[0].partition != partition:
            return None
        location = parsed[0]
        return SnapshotFolder(prefix, location.lsn, location.snapshot_id, location.metadata_key)

    def latest_key(self, partition: int) -> str:
        return restate.latest_pointer_key(self.prefix, partition)


@dataclass(frozen=True, slots=True)
class RestateArrival:
    """A Restate ``metadata.json`` key, placed: its stream's prefix and where it is."""

    layout: RestatePrefix
    location: restate.RestateLocation

    @property
    def stream(self) -> str:
        return self.layout.stream
