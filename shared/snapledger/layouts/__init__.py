"""Snapshot layouts: how a producer writes snapshots into the bucket, as pure keys.

A layout is one strategy (``snapledger.strategies``) satisfying ``LayoutStrategy``
(``layouts/strategy.py``): its keys, what registration checks, who owns its pointer
object, what GC may delete and how a consumer boots from it. This package, below the
services, holds what they may know of a layout: the protocols (``strategy.py``, and
``lineage.py``'s ``Layouts``: the catalog they are given), the keys (``native_keys.py``;
Restate's ``restate_keys.py``, ``restate_prefix.py`` and the documents in ``restate.py``),
the registry of layouts and their facts (``registry.py``) and the layout map checked
against it (``layout_map.py``). Pure: the I/O is the services', which the strategies bind
(docs/layouts.md).
"""

from __future__ import annotations

from typing import Literal

#: A layout's name: one of ``layouts/registry.py``'s ``LAYOUT_NAMES`` (the registry is the
#: one list of the layouts snapledger reads; the layout map's check refuses any other).
LayoutName = str
#: Who writes a lineage's pointer object: snapledger (native), or the producer (foreign
#: layouts; snapledger then writes it only to heal or on an operator's restore-from-chosen,
#: always by compare-and-swap).
PointerOwner = Literal["snapledger", "producer"]

__all__ = ["LayoutName", "PointerOwner"]
