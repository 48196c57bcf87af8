"""Each lineage's layout, as the services see it: the catalog they are given, and the
configuration it is built from.

Registration, GC, the orphan sweep, heal and the local router ask the catalog they are
given (``Layouts``) for a stream's strategy, or to place an arriving key, instead of
assuming snapledger's own keys. The catalog itself (``strategies/catalog.py``:
``LayoutCatalog``) registers the strategies (``strategies/``) and is built by the
composition (``snapledger.runtime``, ``snapledger.local``): no service imports a strategy.

``layout_config`` checks which streams have which layout: each configured Restate prefix
the stream its partitions belong to (``SNAPLEDGER_RESTATE_PREFIXES``, the deploy parameter
``-c restatePrefixes``), each configured Kafka Streams changelog topic the kafka-streams
layout (``SNAPLEDGER_KAFKA_STREAMS_STREAMS``); every other stream has the native layout.
The catalog is built from it, and the deploy's synth checks its context with it. Pure: no
I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts import restate_keys as restate
from snapledger.layouts.restate_prefix import RestatePrefix, restate_prefix
from snapledger.layouts.strategy import (
    LayoutStrategy,
    Placed,
    Refused,
    SnapshotFolder,
    folder_of_manifest,
)

#: Any layout's snapshot id: a ULID (native) or Restate's ``snap_`` and base62 digits.
SNAPSHOT_ID_PATTERN = rf"(?:{native.ULID_PATTERN}|{restate.SNAPSHOT_ID_PATTERN})"
#: What services that only read keys call a stream's layout (the strategy answers them).
LineageLayout = LayoutStrategy
#: Kafka Streams names every store's changelog topic ``{application.id}-{store}-changelog``.
CHANGELOG_SUFFIX = "-changelog"

__all__ = [
    "CHANGELOG_SUFFIX",
    "SNAPSHOT_ID_PATTERN",
    "LayoutConfig",
    "Layouts",
    "LineageLayout",
    "SnapshotFolder",
    "folder_of_manifest",
    "layout_config",
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


@dataclass(frozen=True, slots=True)
class LayoutConfig:
    """Which streams have a layout other than native, checked (``layout_config``)."""

    restate: tuple[RestatePrefix, ...]  # by stream
    kafka_streams: tuple[str, ...]  # the changelog topics, as given


def layout_config(
    restate_prefixes: Mapping[str, str] | None = None, kafka_streams: Iterable[str] = ()
) -> LayoutConfig:
    """The configured layouts, or ``InvalidRequestError`` naming what is wrong: a prefix or
    stream that does not parse, a stream given two prefixes, prefixes that overlap, a
    stream named both Restate and Kafka Streams, a topic that is no changelog's name."""
    prefixes: dict[str, RestatePrefix] = {}  # stream -> its prefix
    for raw_prefix, stream in (restate_prefixes or {}).items():
        layout = restate_prefix(raw_prefix, stream)
        if stream in prefixes:
            raise InvalidRequestError(
                f"stream {stream!r} is given two Restate prefixes "
                f"({prefixes[stream].prefix!r} and {layout.prefix!r}): a stream's "
                "partitions are one cluster's, so give each cluster its own stream name"
            )
        for other in prefixes.values():
            if _nested(layout.prefix, other.prefix):
                raise InvalidRequestError(
                    f"Restate prefixes {layout.prefix!r} and {other.prefix!r} overlap: "
                    "each cluster needs a prefix of its own that holds no other's"
                )
        prefixes[stream] = layout
    topics = []
    for stream in kafka_streams:
        if stream in prefixes:
            raise InvalidRequestError(
                f"stream {stream!r} is named both a Restate stream and a Kafka Streams "
                "changelog: a stream has one layout, so drop it from one of the settings"
            )
        topics.append(changelog_topic(stream))
    return LayoutConfig(tuple(prefixes[s] for s in sorted(prefixes)), tuple(topics))


def changelog_topic(stream: str) -> str:
    """A configured Kafka Streams stream (``SNAPLEDGER_KAFKA_STREAMS_STREAMS``), checked: a
    store's changelog topic's name."""
    try:
        native.check_stream_name(stream)
    except InvalidKeyError as exc:
        raise InvalidRequestError(f"Kafka Streams stream {stream!r}: {exc}") from exc
    application_and_store = stream.removesuffix(CHANGELOG_SUFFIX)
    if not stream.endswith(CHANGELOG_SUFFIX) or "-" not in application_and_store.strip("-"):
        raise InvalidRequestError(
            f"Kafka Streams stream {stream!r} is not a changelog topic's name: Kafka Streams "
            "names a store's changelog {application.id}-{store}-changelog (e.g. "
            "totals-app-totals-changelog); give that topic's name"
        )
    return stream


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")
