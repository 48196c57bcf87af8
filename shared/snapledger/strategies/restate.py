"""The Restate layout's strategy: Restate 1.7's keys under a configured prefix.

``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/*.sst + metadata.json`` and Restate's own
``{prefix}/{partition}/latest.json`` (``layouts/restate_prefix.py``, ``layouts/
restate_keys.py``). Registration checks ``metadata.json`` and its files without reading
their data (``services/restate_snapshots.py``: every file listed with its size, each SST's
RocksDB footer, one writer per lineage); Restate owns ``latest.json``; GC heals a broken
latest first, records the snapshots Restate evicted, keeps what ``latest.json`` names and
prunes its ``retained_snapshots`` of what it deleted (``services/restate_gc.py``); a
Restate node boots from ``latest.json`` as it always does (docs/restate.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from snapledger import layout as native
from snapledger.errors import InvalidKeyError
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts import restate_keys as restate
from snapledger.layouts.restate_prefix import RestateArrival, RestatePrefix
from snapledger.layouts.strategy import Placed, Refused, RestorableUnlessBroken
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds, ObjectStore
from snapledger.services import restate_snapshots
from snapledger.services.gc_steps import LineageSteps, StepsContext
from snapledger.services.restate_gc import RestateSteps

NOT_METADATA = "not a Restate snapshot's metadata.json (an SST, or latest.json)"


@dataclass(frozen=True, slots=True)
class RestateLayout(RestatePrefix, RestorableUnlessBroken):
    """Restate 1.7's: ``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/metadata.json``."""

    name: LayoutName = "restate"
    owner: PointerOwner = restate.POINTER_OWNER
    manifest_name: str = restate.METADATA_NAME
    boot: str = "Restate's own latest.json (docs/restate.md): the node restores as it always does"

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
        location = restate.parse_restate_key(placed.key, self.prefix)
        if location is None:  # placed by ``place``: it parsed there
            raise InvalidKeyError(f"{placed.key!r} is no metadata.json under {self.prefix!r}")
        return restate_snapshots.register_command(RestateArrival(self, location), store), None

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        return RestateSteps(context, self)
