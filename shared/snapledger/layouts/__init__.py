"""Snapshot layouts: how a producer writes snapshots into the bucket.

A layout is one module holding a ``LayoutStrategy`` (``layouts/strategy.py``): its keys,
what registration checks, who owns its pointer object, what GC may delete and how a
consumer boots from it. ``native`` (``layouts/native.py``) is snapledger's own (a
``_manifest.json`` per snapshot, ``latest.json`` kept by snapledger); ``restate``
(``layouts/restate_strategy.py``, keys and documents in ``restate_keys.py`` and
``restate.py``) is a foreign layout snapledger adopts unchanged; ``kafka-streams``
(``layouts/kafka_streams.py``) keeps a Kafka Streams task's RocksDB store folders under
the native keys. The catalog
(``layouts/lineage.py``) registers them per stream. Keys and checks here are pure; the I/O
is the services' (docs/layouts.md).
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
