"""The Restate layout as a strategy: Restate 1.7's keys under a configured prefix.

``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/*.sst + metadata.json`` and Restate's own
``{prefix}/{partition}/latest.json`` (``layouts/restate_keys.py``). Registration checks
``metadata.json`` and its files without reading their data (``services/
restate_snapshots.py``: every file listed with its size, each SST's RocksDB footer, one
writer per lineage); Restate owns ``latest.json``; GC heals a broken latest first, records
the snapshots Restate evicted, keeps what ``latest.json`` names and prunes its
``retained_snapshots`` of what it deleted (``services/restate_gc.py``); a Restate node
boots from ``latest.json`` as it always does (docs/restate.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts import restate_keys as restate
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

#: Prefixes snapledger writes itself: no Restate prefix may be inside one, or hold one.
_RESERVED = (native.SNAPSHOTS, native.CHANGELOG, native.RESTORES)
NOT_METADATA = "not a Restate snapshot's metadata.json (an SST, or latest.json)"


@dataclass(frozen=True, slots=True)
class RestateLayout(RestorableUnlessBroken):
    """Restate 1.7's: ``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/metadata.json``."""

    stream: str
    prefix: str  # normalized (``restate.normalize_prefix``)
    name: LayoutName = "restate"
    owner: PointerOwner = restate.POINTER_OWNER
    manifest_name: str = restate.METADATA_NAME
    boot: str = "Restate's own latest.json (docs/restate.md): the node restores as it always does"

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

    def place(self, key: str) -> Placed | Refused | None:
        """The snapshot whose ``metadata.json`` is at ``key``; why an object under the
        prefix is none; None when ``key`` is outside the prefix."""
        if not key.startswith(self.prefix + "/"):
            return None
        location = restate.parse_restate_key(key, self.prefix)
        if location is None:
            return Refused(NOT_METADATA, manifest=False)
        place = native.SnapshotLocation(
            self.stream, location.partition, location.lsn, location.snapshot_id
        )
        return Placed(self, place, key)

    def register_command(
        self, placed: Placed, store: ObjectStore, holds: ObjectHolds | None
    ) -> tuple[RegisterSnapshot, ManifestV1 | None]:
        from snapledger.services import restate_snapshots

        location = restate.parse_restate_key(placed.key, self.prefix)
        if location is None:  # placed by ``place``: it parsed there
            raise InvalidKeyError(f"{placed.key!r} is no metadata.json under {self.prefix!r}")
        return restate_snapshots.register_command(RestateArrival(self, location), store), None

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        from snapledger.services.restate_gc import RestateSteps

        return RestateSteps(context, self)


@dataclass(frozen=True, slots=True)
class RestateArrival:
    """A Restate ``metadata.json`` key, placed: its stream and where it is."""

    layout: RestateLayout
    location: restate.RestateLocation

    @property
    def stream(self) -> str:
        return self.layout.stream


def restate_layout(raw_prefix: str, stream: str) -> RestateLayout:
    """The layout of a configured prefix (``SNAPLEDGER_RESTATE_PREFIXES``), checked."""
    try:
        native.check_stream_name(stream)
        prefix = restate.normalize_prefix(raw_prefix)
    except (InvalidKeyError, ValueError) as exc:
        raise InvalidRequestError(f"Restate prefix {raw_prefix!r} → {stream!r}: {exc}") from exc
    if not prefix:
        raise InvalidRequestError(
            f"Restate prefix {raw_prefix!r} is the bucket's root: give the cluster a prefix "
            "(e.g. restate/prod-1) so its objects stay apart from snapledger's own"
        )
    top = prefix.split("/", 1)[0]
    if top in _RESERVED:
        raise InvalidRequestError(
            f"Restate prefix {prefix!r} is inside {top}/, which snapledger writes itself: "
            "choose a prefix outside snapshots/, changelog/ and restores/ (e.g. restate/prod-1)"
        )
    return RestateLayout(stream=stream, prefix=prefix)
