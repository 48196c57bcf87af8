"""Snapshot layouts: how a producer writes snapshots into the bucket, as pure keys.

A layout is one strategy (``snapledger.strategies``) satisfying ``LayoutStrategy``
(``layouts/strategy.py``): its keys, what registration checks, who owns its pointer
object, what GC may delete and how a consumer boots from it. This package, below the
services, holds what they may know of a layout: the protocols (``strategy.py``, and
``lineage.py``'s ``Layouts``: the catalog they are given), the keys (``native_keys.py``;
Restate's ``restate_keys.py``, ``restate_prefix.py`` and the documents in ``restate.py``)
and the configuration check (``lineage.py``: ``layout_config``). Pure: the I/O is the
services', which the strategies bind (docs/layouts.md).
"""

from __future__ import annotations

from typing import Literal

#: The layouts snapledger reads.
LayoutName = Literal["native", "restate", "kafka-streams"]
#: Who writes a lineage's pointer object: snapledger (native), or the producer (foreign
#: layouts; snapledger then writes it only to heal or on an operator's restore-from-chosen,
#: always by compare-and-swap).
PointerOwner = Literal["snapledger", "producer"]

POINTER_OWNERS: dict[LayoutName, PointerOwner] = {
    "native": "snapledger",
    "restate": "producer",
    "kafka-streams": "snapledger",
}

__all__ = ["POINTER_OWNERS", "LayoutName", "PointerOwner"]
