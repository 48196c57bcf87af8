"""Each lineage's layout, as the services see it: the catalog they are given.

Registration, GC, the orphan sweep, heal and the local router ask the catalog they are
given (``Layouts``) for a stream's strategy, or to place an arriving key, instead of
assuming snapledger's own keys. The catalog itself (``strategies/catalog.py``:
``LayoutCatalog``) is built from the layout map (``layouts/layout_map.py``:
``SNAPLEDGER_LAYOUTS``, ``-c layouts``) with the strategies the registry names
(``layouts/registry.py``) by the composition (``snapledger.runtime``, ``snapledger.local``):
no service imports a strategy. Pure: no I/O.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from snapledger.layouts.registry import MANIFEST_NAMES, SNAPSHOT_ID_PATTERN
from snapledger.layouts.strategy import (
    LayoutStrategy,
    Placed,
    Refused,
    SnapshotFolder,
    folder_of_manifest,
)

#: What services that only read keys call a stream's layout (the strategy answers them).
LineageLayout = LayoutStrategy

__all__ = [
    "MANIFEST_NAMES",
    "SNAPSHOT_ID_PATTERN",
    "Layouts",
    "LineageLayout",
    "SnapshotFolder",
    "folder_of_manifest",
]

#: What a catalog's strategies are to its user: every one a ``LayoutStrategy``; GC's are
#: also ``CollectedStrategy`` (``services/gc_steps.py``: its steps).
S_co = TypeVar("S_co", bound=LayoutStrategy, covariant=True)


class Layouts(Protocol[S_co]):
    """Each stream's strategy (``strategies/catalog.py``: ``LayoutCatalog``)."""

    @property
    def rooted(self) -> tuple[S_co, ...]:
        """The configured layouts with a root of their own (outside ``snapshots/``), by
        stream: the folders the router watches and the orphan sweep walks besides it."""
        ...

    def for_stream(self, stream: str) -> S_co: ...

    def place(self, key: str) -> Placed | Refused:
        """The snapshot whose manifest is at ``key`` (any layout's) with its stream's
        strategy, or why ``key`` names none."""
        ...
