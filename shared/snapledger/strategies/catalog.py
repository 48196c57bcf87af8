"""The layout catalog: each stream's strategy, built from the configured layouts.

The composition builds it (``snapledger.runtime``, ``snapledger.local``) and gives it to
the services, which know it only as ``layouts/lineage.py``'s ``Layouts``: Restate for the
configured prefixes (``strategies/restate.py``), kafka-streams for the configured changelog
topics (``strategies/kafka_streams.py``), native for the rest (``strategies/native.py``).
The configuration is checked by ``layouts/lineage.py``'s ``layout_config``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from snapledger.layouts.lineage import layout_config
from snapledger.layouts.native_keys import native_location
from snapledger.layouts.strategy import Placed, Refused, RootedStrategy
from snapledger.services.gc_steps import CollectedStrategy
from snapledger.strategies.kafka_streams import KafkaStreamsLayout
from snapledger.strategies.native import NativeLayout
from snapledger.strategies.restate import RestateLayout

__all__ = ["NATIVE_ONLY", "LayoutCatalog", "RootedCollected"]


class RootedCollected(RootedStrategy, CollectedStrategy, Protocol):
    """A layout with a root of its own as the catalog holds it: it places keys under its
    root and gives GC its steps."""


class LayoutCatalog:
    """Each stream's layout: Restate for the configured prefixes, kafka-streams for the
    configured changelog topics, native for the rest."""

    def __init__(
        self,
        restate_prefixes: Mapping[str, str] | None = None,
        kafka_streams: Iterable[str] = (),
    ) -> None:
        config = layout_config(restate_prefixes, kafka_streams)
        self._restate = {p.stream: RestateLayout(p.stream, p.prefix) for p in config.restate}
        self._kafka_streams = {t: KafkaStreamsLayout(t) for t in config.kafka_streams}

    @property
    def restate_layouts(self) -> tuple[RestateLayout, ...]:
        return tuple(self._restate[s] for s in sorted(self._restate))

    @property
    def rooted(self) -> tuple[RootedCollected, ...]:
        """The configured layouts with a root of their own (outside ``snapshots/``), by
        stream: the folders the router watches and the orphan sweep walks besides it."""
        return self.restate_layouts

    def for_stream(self, stream: str) -> CollectedStrategy:
        return self._restate.get(stream) or self._kafka_streams.get(stream) or NativeLayout(stream)

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
