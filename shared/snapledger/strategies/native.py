"""The native layout's strategy: snapledger's own keys, manifest and pointer.

``snapshots/{stream}/{partition}/{lsn:020d}-{ulid}/... _manifest.json`` (``snapledger.
layout``, ``layouts/native_keys.py``); registration checks the manifest (``services/
manifest_checks.py``: schema, every file present with its size, checksums, the
``kv-parquet`` columns); snapledger owns ``latest.json``; GC reads and repairs
``latest.json`` and ``generation.json`` and keeps what they name (``services/gc_steps.py``:
``NativeSteps``); a consumer boots from ``latest.json`` (``snapledger.client``).
"""

from __future__ import annotations

from dataclasses import dataclass

from snapledger import layout as keys
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts.native_keys import NativeKeys
from snapledger.layouts.strategy import Placed, RestorableUnlessBroken
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds, ObjectStore
from snapledger.services.gc_steps import LineageSteps, NativeSteps, StepsContext
from snapledger.services.manifest_checks import command_for


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
        return command_for(placed.location, placed.key, store, holds)

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        return NativeSteps(context)
