"""The layout map the local runtime applies: the ``SNAPLEDGER_*`` environment's, read as the
deployed functions read it, joined by what ``snapledger local up`` was started with.

The functions learn each stream's layout from the layout map (``SNAPLEDGER_LAYOUTS``, with
the deprecated per-layout variables read into it: ``settings_layout_map``). The local
runtime reads the same variables from its process's environment, adds ``local up``'s
``--layout KEY=LAYOUT[:STREAM]`` options (``parse_layout_options``) and, in a process
attaching to a running ``local up`` (every ``--local`` command), the map that ``local up``
wrote in ``runtime.json``; the result is written back into ``SNAPLEDGER_LAYOUTS`` alone, and
the runtime is built from it by the composition root (``snapledger.runtime.build_runtime``),
as the functions' is. A key given two different entries is an error, as is anything the
map's own check refuses (``layouts/layout_map.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from snapledger.errors import InvalidRequestError
from snapledger.layouts.layout_map import (
    LayoutMap,
    layout_map,
    legacy_entries,
    settings_layout_map,
)
from snapledger.settings import (
    ENV_KAFKA_STREAMS_STREAMS,
    ENV_LAYOUTS,
    ENV_RESTATE_PREFIXES,
    LedgerSettings,
)

#: runtime.json's field for the layout map ``local up`` applies.
LAYOUTS_FIELD = "layouts"
#: The fields an older ``local up`` wrote instead (read, never written).
LEGACY_FIELDS = ("restate_prefixes", "kafka_streams_streams")


def parse_layout_options(values: Iterable[str], *, option: str = "--layout") -> LayoutMap:
    """``KEY=LAYOUT[:STREAM]`` arguments as a layout map, checked as the deploy's
    ``-c layouts`` is; ``InvalidRequestError`` names the argument."""
    raw: dict[str, dict[str, str]] = {}
    for value in values:
        key, equals, rest = value.partition("=")
        layout, colon, stream = rest.partition(":")
        if not equals or not key.strip() or not layout.strip() or (colon and not stream.strip()):
            raise InvalidRequestError(
                f"{option} {value!r}: give KEY=LAYOUT or PREFIX=LAYOUT:STREAM, e.g. "
                "restate/cluster-a=restate:payments or totals-app-totals-changelog=kafka-streams"
            )
        entry = {"layout": layout.strip()}
        if colon:
            entry["stream"] = stream.strip()
        if raw.setdefault(key.strip(), entry) != entry:
            raise InvalidRequestError(f"{option} {value!r}: {key.strip()!r} is given twice")
    return layout_map(raw, source=option)


def from_settings(settings: LedgerSettings) -> LayoutMap:
    """The map ``SNAPLEDGER_*`` declares (the deprecated variables read into it)."""
    return settings_layout_map(settings)


def from_runtime_file(info: Mapping[str, Any] | None) -> LayoutMap:
    """The map a running ``local up`` wrote in ``runtime.json`` (none: no such)."""
    if info is None:
        return LayoutMap()
    legacy = legacy_entries(info.get(LEGACY_FIELDS[0]), info.get(LEGACY_FIELDS[1]) or ())
    return layout_map({**legacy, **(info.get(LAYOUTS_FIELD) or {})}, source="runtime.json")


def environment(layouts: LayoutMap) -> dict[str, str]:
    """The ``SNAPLEDGER_*`` variables that say ``layouts``: the map alone (the deprecated
    variables emptied, as the map already holds what they said)."""
    return {
        ENV_LAYOUTS: layouts.dumps(),
        ENV_RESTATE_PREFIXES: "{}",
        ENV_KAFKA_STREAMS_STREAMS: "[]",
    }


def runtime_file(layouts: LayoutMap) -> dict[str, Any]:
    """runtime.json's field for them (``from_runtime_file`` reads it back)."""
    return {LAYOUTS_FIELD: layouts.as_json()}
