"""The layout catalog: each stream's strategy, built from the layout map.

The composition builds it (``snapledger.runtime``, ``snapledger.local``) from the one
layout map (``layouts/layout_map.py``: ``SNAPLEDGER_LAYOUTS``) and gives it to the
services, which know it only as ``layouts/lineage.py``'s ``Layouts``. Each entry's strategy
is the one the registry (``layouts/registry.py``) names for its layout, built with the
entry's stream (and prefix, for a layout with one of its own); every stream the map does
not name has the native layout (``strategies/native.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from importlib import import_module
from typing import Any, Protocol, cast

from snapledger.layouts.layout_map import LayoutEntry, LayoutMap, layout_map, legacy_entries
from snapledger.layouts.native_keys import native_location
from snapledger.layouts.registry import LAYOUTS
from snapledger.layouts.strategy import Placed, Refused, RootedStrategy
from snapledger.services.gc_steps import CollectedStrategy
from snapledger.strategies.kafka_streams import KafkaStreamsLayout
from snapledger.strategies.native import NativeLayout
from snapledger.strategies.restate import RestateLayout

__all__ = ["NATIVE_ONLY", "LayoutCatalog", "RootedCollected", "strategy_class"]


class RootedCollected(RootedStrategy, CollectedStrategy, Protocol):
    """A layout with a root of its own as the catalog holds it: it places keys under its
    root and gives GC its steps."""


@cache
def strategy_class(layout: str) -> Any:
    """The strategy class the registry names for ``layout`` (``module:Class``)."""
    module, _, name = LAYOUTS[layout].strategy.partition(":")
    return getattr(import_module(module), name)


#: What the composition hands a layout's strategies besides their entry (a connection to
#: the producer's own bookkeeping, e.g. Fluss's ZooKeeper): layout -> keyword arguments.
Bindings = Mapping[str, Mapping[str, Any]]


def _strategy(entry: LayoutEntry, bindings: Bindings) -> CollectedStrategy:
    cls = strategy_class(entry.layout)
    bound = bindings.get(entry.layout, {})
    if LAYOUTS[entry.layout].rooted:
        return cls(entry.stream, entry.key, **bound)  # type: ignore[no-any-return]
    return cls(entry.stream, **bound)  # type: ignore[no-any-return]


class LayoutCatalog:
    """Each stream's layout: the strategy of its entry in the layout map, native for the
    streams it does not name."""

    def __init__(self, layouts: LayoutMap | None = None, bindings: Bindings | None = None) -> None:
        self.map = layouts or LayoutMap()
        self._streams = {e.stream: _strategy(e, bindings or {}) for e in self.map.entries}
        self._restate = {
            s: layout for s, layout in self._streams.items() if isinstance(layout, RestateLayout)
        }
        self._kafka_streams = {
            s: layout
            for s, layout in self._streams.items()
            if isinstance(layout, KafkaStreamsLayout)
        }

    @classmethod
    def of(
        cls, restate_prefixes: Mapping[str, str] | None = None, kafka_streams: Iterable[str] = ()
    ) -> LayoutCatalog:
        """The catalog of the deprecated per-layout settings' values (tests, old callers)."""
        return cls(layout_map(legacy_entries(restate_prefixes, kafka_streams)))

    @property
    def restate_layouts(self) -> tuple[RestateLayout, ...]:
        return tuple(self._restate[s] for s in sorted(self._restate))

    @property
    def rooted(self) -> tuple[RootedCollected, ...]:
        """The configured layouts with a root of their own (outside ``snapshots/``), by
        stream: the folders the router watches and the orphan sweep walks besides it (every
        layout the registry marks rooted: no layout is named here)."""
        entries = sorted(self.map.entries, key=lambda entry: entry.stream)
        return tuple(
            cast(RootedCollected, self._streams[e.stream])
            for e in entries
            if LAYOUTS[e.layout].rooted
        )

    def for_stream(self, stream: str) -> CollectedStrategy:
        return self._streams.get(stream) or NativeLayout(stream)

    def restate_for(self, stream: str) -> RestateLayout | None:
        """The stream's Restate layout, for the Restate-only actions (restore-from-chosen,
        heal on demand); None if it has another."""
        return self._restate.get(stream)

    def place(self, key: str) -> Placed | Refused:
        """The snapshot whose manifest is at ``key`` (any layout's) with its stream's
        strategy, or why ``key`` names none: each rooted layout is asked first (a key under
        its root is its own), then the native keys."""
        for layout in self.rooted:
            placed = layout.place(key)
            if placed is not None:
                return placed
        location = native_location(key)
        if isinstance(location, Refused):
            return location
        return Placed(self.for_stream(location.stream), location, key)


NATIVE_ONLY = LayoutCatalog()
