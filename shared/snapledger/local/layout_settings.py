"""The layouts the local runtime applies: the ``SNAPLEDGER_*`` environment's, read as the
deployed functions read it, joined by what ``snapledger local up`` was started with.

The functions learn each stream's layout from ``SNAPLEDGER_RESTATE_PREFIXES`` and
``SNAPLEDGER_KAFKA_STREAMS_STREAMS`` (settings.py). The local runtime reads the same two
variables from its process's environment, adds ``local up``'s ``--restate-prefix`` and
``--kafka-streams-stream`` options, and, in a process attaching to a running ``local up``
(every ``--local`` command), what that ``local up`` wrote in ``runtime.json``; the result
is written back into the two variables, and the runtime is built from them by the
composition root (``snapledger.runtime.build_runtime``), as the functions' is. A prefix
named for two different streams is an error, as is a stream given two layouts
(``layouts/lineage.py``'s ``layout_config``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from snapledger.errors import InvalidRequestError
from snapledger.layouts.lineage import layout_config
from snapledger.settings import ENV_KAFKA_STREAMS_STREAMS, ENV_RESTATE_PREFIXES, LedgerSettings

#: runtime.json's fields for the layouts ``local up`` applies.
RESTATE_FIELD = "restate_prefixes"
KAFKA_STREAMS_FIELD = "kafka_streams_streams"


@dataclass(frozen=True)
class LocalLayouts:
    """Restate prefixes (each with its stream) and Kafka Streams changelog topics."""

    restate_prefixes: Mapping[str, str] = field(default_factory=dict)
    kafka_streams: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: LedgerSettings) -> LocalLayouts:
        """The layouts settings read from ``SNAPLEDGER_*`` name."""
        return cls(dict(settings.restate_prefixes), tuple(settings.kafka_streams_streams))

    @classmethod
    def from_runtime_file(cls, info: Mapping[str, Any] | None) -> LocalLayouts:
        """The layouts a running ``local up`` wrote in ``runtime.json`` (none: no such)."""
        if info is None:
            return cls()
        prefixes = info.get(RESTATE_FIELD) or {}
        streams = info.get(KAFKA_STREAMS_FIELD) or []
        return cls(dict(prefixes), tuple(streams))

    def joined(self, other: LocalLayouts, *, source: str) -> LocalLayouts:
        """These layouts and ``other``'s (``source`` says where those came from); checked
        as the functions' settings are."""
        prefixes = dict(self.restate_prefixes)
        for prefix, stream in other.restate_prefixes.items():
            if prefixes.setdefault(prefix, stream) != stream:
                raise InvalidRequestError(
                    f"Restate prefix {prefix!r} is stream {prefixes[prefix]!r} in "
                    f"{ENV_RESTATE_PREFIXES} but {stream!r} in {source}: give it one stream"
                )
        streams = tuple(dict.fromkeys((*self.kafka_streams, *other.kafka_streams)))
        layout_config(prefixes, streams)
        return LocalLayouts(prefixes, streams)

    def environment(self) -> dict[str, str]:
        """The two ``SNAPLEDGER_*`` variables that say these layouts."""
        return {
            ENV_RESTATE_PREFIXES: json.dumps(dict(self.restate_prefixes)),
            ENV_KAFKA_STREAMS_STREAMS: json.dumps(list(self.kafka_streams)),
        }

    def runtime_file(self) -> dict[str, Any]:
        """runtime.json's fields for them (``from_runtime_file`` reads them back)."""
        return {
            RESTATE_FIELD: dict(self.restate_prefixes),
            KAFKA_STREAMS_FIELD: list(self.kafka_streams),
        }
