"""Snapshot layouts: how a producer writes snapshots into the bucket.

A layout is one module: its key pattern, its metadata parser, its file checks, and who
owns its pointer object. ``native`` is snapledger's own (``snapledger.layout``: a
``_manifest.json`` per snapshot, ``latest.json`` kept by snapledger); each foreign layout
snapledger adopts unchanged lives in a module here, first ``restate``
(``snapledger.layouts.restate``). Everything here is pure: the I/O is the services'.
"""

from __future__ import annotations

from typing import Literal

#: The layouts snapledger reads.
LayoutName = Literal["native", "restate"]
#: Who writes a lineage's pointer object: snapledger (native), or the producer (foreign
#: layouts; snapledger then writes it only to heal or on an operator's restore-from-chosen,
#: always by compare-and-swap).
PointerOwner = Literal["snapledger", "producer"]

POINTER_OWNERS: dict[LayoutName, PointerOwner] = {
    "native": "snapledger",
    "restate": "producer",
}

__all__ = ["POINTER_OWNERS", "LayoutName", "PointerOwner"]
