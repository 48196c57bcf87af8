"""The layout map: which layout each stream, or each bucket prefix, has, declared once.

A JSON object, each key a stream (for a layout keyed by stream: its snapshots are under
``snapshots/{stream}/``) or a bucket prefix (for a layout with a prefix of its own, e.g.
Restate's), each value the entry::

    {"restate/prod-1": {"layout": "restate", "stream": "payments"},
     "totals-app-totals-changelog": {"layout": "kafka-streams"}}

``"stream"`` is required for a prefix (the stream its partitions are) and, for a stream,
may only repeat the key. A stream the map does not name has the native layout. The same
map is ``SNAPLEDGER_LAYOUTS`` (the functions and the local runtime), the deploy's
``-c layouts`` and ``snapledger local up --layout KEY=LAYOUT[:STREAM]``; the catalog of
strategies is built from it (``strategies/catalog.py``). The deprecated per-layout
settings (``SNAPLEDGER_RESTATE_PREFIXES``, ``SNAPLEDGER_KAFKA_STREAMS_STREAMS``; ``-c
restatePrefixes``, ``-c kafkaStreamsStreams``) are read into the same map
(``legacy_entries``); a key given by both must agree.

Checked against the registry (``layouts/registry.py``): at most ``MAX_LAYOUT_ENTRIES``
entries; a known layout; a key its layout accepts; a stream given one layout (and one
prefix); prefixes that do not overlap. Each error names the entry and the field. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts.registry import DEFAULT_LAYOUT, registered
from snapledger.settings import ENV_LAYOUTS, LEGACY_LAYOUT_SOURCE, LedgerSettings

#: The most entries a map holds: the functions carry it in one environment variable
#: (Lambda's 4 KB for all of them) and the deploy scopes policies to each prefix.
MAX_LAYOUT_ENTRIES = 32
#: The fields of an entry.
FIELDS = ("layout", "stream")


@dataclass(frozen=True, slots=True)
class LayoutEntry:
    """One entry, checked: its key normalized, its layout and the stream it is."""

    key: str
    layout: str
    stream: str

    def as_json(self) -> dict[str, str]:
        if registered(self.layout).rooted:
            return {"layout": self.layout, "stream": self.stream}
        return {"layout": self.layout}


@dataclass(frozen=True, slots=True)
class LayoutMap:
    """The checked map, its entries sorted by key."""

    entries: tuple[LayoutEntry, ...] = ()

    def of(self, layout: str) -> tuple[LayoutEntry, ...]:
        """The entries of ``layout``, by key."""
        return tuple(e for e in self.entries if e.layout == layout)

    def layout_of(self, stream: str) -> str:
        """The layout of ``stream`` (native unless the map names it)."""
        return next((e.layout for e in self.entries if e.stream == stream), DEFAULT_LAYOUT)

    def as_json(self) -> dict[str, dict[str, str]]:
        return {e.key: e.as_json() for e in self.entries}

    def dumps(self) -> str:
        """The canonical JSON (sorted, compact): what ``SNAPLEDGER_LAYOUTS`` carries."""
        return json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))

    def joined(self, other: LayoutMap, *, source: str) -> LayoutMap:
        """This map and ``other``'s entries (``source`` says where those came from): a key
        in both must have the same entry; the result is checked as one map."""
        mine = {e.key: e for e in self.entries}
        for entry in other.entries:
            if mine.setdefault(entry.key, entry) != entry:
                raise InvalidRequestError(
                    f"{source}: entry {entry.key!r} is {_said(entry)} there but "
                    f"{_said(mine[entry.key])} elsewhere: give the key one entry"
                )
        return layout_map({e.key: e.as_json() for e in mine.values()}, source=source)


def _said(entry: LayoutEntry) -> str:
    return json.dumps(entry.as_json(), sort_keys=True)


def layout_map(raw: object, *, source: str = "the layout map") -> LayoutMap:
    """``raw`` (a mapping, or its JSON text) checked into a ``LayoutMap``, or
    ``InvalidRequestError`` naming ``source``, the entry and the field that is wrong."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"{source} is not JSON: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InvalidRequestError(
            f"{source} must be a JSON object of stream or prefix to its entry, e.g. "
            '{"restate/prod-1": {"layout": "restate", "stream": "payments"}}; got '
            f"{type(raw).__name__}"
        )
    if len(raw) > MAX_LAYOUT_ENTRIES:
        raise InvalidRequestError(
            f"{source} has {len(raw)} entries, over the {MAX_LAYOUT_ENTRIES} a map holds "
            "(docs/layouts.md): deploy a stack per group of producers"
        )
    entries: dict[str, LayoutEntry] = {}
    for key, value in raw.items():
        entry = _entry(key, value, source)
        if entry.key in entries:
            raise InvalidRequestError(
                f"{source}: entry {key!r}: field 'key': it is {entry.key!r} once normalized, "
                "as another entry is: give each key once"
            )
        _check_apart(entry, entries.values(), source)
        entries[entry.key] = entry
    return LayoutMap(tuple(entries[k] for k in sorted(entries)))


def _entry(key: object, value: object, source: str) -> LayoutEntry:
    where = f"{source}: entry {key!r}"
    if not isinstance(key, str):
        raise InvalidRequestError(f"{where}: field 'key': must be a string")
    if isinstance(value, str):
        value = {"layout": value}
    if not isinstance(value, Mapping):
        raise InvalidRequestError(
            f'{where}: must be an object such as {{"layout": "restate", "stream": "payments"}}'
            f" or a layout's name, got {value!r}"
        )
    if unknown := sorted(set(value) - set(FIELDS)):
        raise InvalidRequestError(
            f"{where}: field {unknown[0]!r}: unknown (an entry has {', '.join(FIELDS)})"
        )
    if "layout" not in value:
        raise InvalidRequestError(f"{where}: field 'layout': missing")
    try:
        kind = registered(value["layout"])
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"{where}: field 'layout': {exc}") from exc
    try:
        normalized = kind.check_key(key)
    except (InvalidKeyError, ValueError) as exc:
        what = "prefix" if kind.rooted else "stream"
        raise InvalidRequestError(f"{where}: field 'key' ({kind.name} {what}): {exc}") from exc
    stream = value.get("stream")
    if kind.rooted:
        if not isinstance(stream, str):
            raise InvalidRequestError(
                f"{where}: field 'stream': required for a {kind.name} prefix (the stream its "
                "partitions are), as a string"
            )
        try:
            native.check_stream_name(stream)
        except InvalidKeyError as exc:
            raise InvalidRequestError(f"{where}: field 'stream': {exc}") from exc
        return LayoutEntry(normalized, kind.name, stream)
    if stream is not None and stream != normalized:
        raise InvalidRequestError(
            f"{where}: field 'stream': a {kind.name} entry's key is its stream; drop "
            f"'stream' or make it {normalized!r}"
        )
    return LayoutEntry(normalized, kind.name, normalized)


def _check_apart(entry: LayoutEntry, others: Iterable[LayoutEntry], source: str) -> None:
    rooted = registered(entry.layout).rooted
    for other in others:
        if other.stream == entry.stream:
            raise InvalidRequestError(
                f"{source}: entry {entry.key!r}: field 'stream': stream {entry.stream!r} is "
                f"also entry {other.key!r}'s ({other.layout}): a stream has one layout and "
                "one prefix, so give each producer its own stream name"
            )
        if rooted and registered(other.layout).rooted and _nested(entry.key, other.key):
            raise InvalidRequestError(
                f"{source}: entry {entry.key!r}: field 'key': prefixes {entry.key!r} and "
                f"{other.key!r} overlap: each producer needs a prefix of its own that holds "
                "no other's"
            )


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def legacy_entries(
    restate_prefixes: Mapping[str, str] | None = None, kafka_streams: Iterable[str] = ()
) -> dict[str, dict[str, str]]:
    """The deprecated per-layout settings as map entries (unchecked: ``layout_map``
    checks them): each Restate prefix with its stream, each Kafka Streams changelog."""
    entries: dict[str, dict[str, str]] = {
        prefix: {"layout": "restate", "stream": stream}
        for prefix, stream in (restate_prefixes or {}).items()
    }
    for topic in kafka_streams:
        if topic in entries:
            raise InvalidRequestError(
                f"entry {topic!r} is named both a Restate prefix and a Kafka Streams "
                "changelog: give it one layout"
            )
        entries[topic] = {"layout": "kafka-streams"}
    return entries


def combined(
    new: object,
    legacy: Mapping[str, object],
    *,
    new_source: str,
    legacy_source: str,
) -> LayoutMap:
    """The map ``new`` declares joined with the deprecated settings' entries: a key both
    give must agree (after normalization)."""
    declared = layout_map(new, source=new_source)
    if not legacy:
        return declared
    return declared.joined(layout_map(legacy, source=legacy_source), source=legacy_source)


def settings_layout_map(settings: LedgerSettings) -> LayoutMap:
    """The settings' layout map: ``SNAPLEDGER_LAYOUTS`` joined with the deprecated
    per-layout settings (a key both give must agree), checked (``InvalidRequestError``
    naming the variable, the entry and the field)."""
    try:
        legacy = legacy_entries(settings.restate_prefixes, settings.kafka_streams_streams)
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"{LEGACY_LAYOUT_SOURCE}: {exc}") from exc
    return combined(
        settings.layouts, legacy, new_source=ENV_LAYOUTS, legacy_source=LEGACY_LAYOUT_SOURCE
    )
