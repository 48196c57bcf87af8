"""The layout catalog: each stream's ``LayoutStrategy`` (``layouts/strategy.py``).

Registration, GC, the orphan sweep, heal and the local router ask the catalog for a
stream's strategy, or to place an arriving key, instead of assuming snapledger's own keys:
a layout is one module (``layouts/native.py``, ``layouts/restate_strategy.py``) that the
catalog registers, not a fork of those services.

The catalog maps each configured Restate prefix to the stream its partitions belong to
(``SNAPLEDGER_RESTATE_PREFIXES``, the deploy parameter ``-c restatePrefixes``) and each
configured Kafka Streams changelog topic to the kafka-streams layout
(``SNAPLEDGER_KAFKA_STREAMS_STREAMS``); every other stream has the native layout. Pure: no
I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from snapledger import layout as native
from snapledger.errors import InvalidRequestError
from snapledger.layouts import restate_keys as restate
from snapledger.layouts.kafka_streams import KafkaStreamsLayout, kafka_streams_layout
from snapledger.layouts.native import NativeLayout, native_location
from snapledger.layouts.restate_strategy import RestateArrival, RestateLayout, restate_layout
from snapledger.layouts.strategy import (
    LayoutStrategy,
    Placed,
    Refused,
    SnapshotFolder,
    folder_of_manifest,
)

#: The object names a producer writes last in a snapshot's folder (GC deletes them last).
MANIFEST_NAMES = (native.MANIFEST_NAME, restate.METADATA_NAME)
#: Any layout's snapshot id: a ULID (native) or Restate's ``snap_`` and base62 digits.
SNAPSHOT_ID_PATTERN = rf"(?:{native.ULID_PATTERN}|{restate.SNAPSHOT_ID_PATTERN})"
#: What services that only read keys call a stream's layout (the strategy answers them).
LineageLayout = LayoutStrategy

__all__ = [
    "MANIFEST_NAMES",
    "NATIVE_ONLY",
    "SNAPSHOT_ID_PATTERN",
    "LayoutCatalog",
    "LineageLayout",
    "NativeLayout",
    "RestateArrival",
    "RestateLayout",
    "SnapshotFolder",
    "folder_of_manifest",
]


class LayoutCatalog:
    """Each stream's layout: Restate for the configured prefixes, kafka-streams for the
    configured changelog topics, native for the rest."""

    def __init__(
        self,
        restate_prefixes: Mapping[str, str] | None = None,
        kafka_streams: Iterable[str] = (),
    ) -> None:
        self._restate: dict[str, RestateLayout] = {}  # stream -> its layout
        for raw_prefix, stream in (restate_prefixes or {}).items():
            layout = restate_layout(raw_prefix, stream)
            if stream in self._restate:
                raise InvalidRequestError(
                    f"stream {stream!r} is given two Restate prefixes "
                    f"({self._restate[stream].prefix!r} and {layout.prefix!r}): a stream's "
                    "partitions are one cluster's, so give each cluster its own stream name"
                )
            for other in self._restate.values():
                if _nested(layout.prefix, other.prefix):
                    raise InvalidRequestError(
                        f"Restate prefixes {layout.prefix!r} and {other.prefix!r} overlap: "
                        "each cluster needs a prefix of its own that holds no other's"
                    )
            self._restate[stream] = layout
        self._kafka_streams: dict[str, KafkaStreamsLayout] = {}
        for stream in kafka_streams:
            if stream in self._restate:
                raise InvalidRequestError(
                    f"stream {stream!r} is named both a Restate stream and a Kafka Streams "
                    "changelog: a stream has one layout, so drop it from one of the settings"
                )
            self._kafka_streams[stream] = kafka_streams_layout(stream)

    @property
    def restate_layouts(self) -> tuple[RestateLayout, ...]:
        return tuple(self._restate[s] for s in sorted(self._restate))

    @property
    def rooted(self) -> tuple[LayoutStrategy, ...]:
        """The configured layouts with a root of their own (outside ``snapshots/``), by
        stream: the folders the router watches and the orphan sweep walks besides it."""
        return self.restate_layouts

    def for_stream(self, stream: str) -> LayoutStrategy:
        return self._restate.get(stream) or self._kafka_streams.get(stream) or NativeLayout(stream)

    def restate_for(self, stream: str) -> RestateLayout | None:
        """The stream's Restate layout, for the Restate-only actions (restore-from-chosen,
        heal on demand); None if it has another."""
        return self._restate.get(stream)

    def place(self, key: str) -> Placed | Refused:
        """The snapshot whose manifest is at ``key`` (any layout's) with its stream's
        strategy, or why ``key`` names none."""
        for layout in self._restate.values():
            placed = layout.place(key)
            if placed is not None:
                return placed
        location = native_location(key)
        if isinstance(location, Refused):
            return location
        return Placed(self.for_stream(location.stream), location, key)


NATIVE_ONLY = LayoutCatalog()


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")
