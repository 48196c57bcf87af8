"""A Restate cluster's prefix, as the services read its lineages: Restate 1.7's keys under it.

``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/*.sst + metadata.json`` and Restate's own
``{prefix}/{partition}/latest.json`` (``layouts/restate_keys.py``). ``RestatePrefix`` is
what the Restate services (``services/restate_snapshots.py``, ``restate_heal.py``,
``restate_pointer.py``, ``restate_gc.py``) are given; the strategy that binds them
(``strategies/restate.py``: ``RestateLayout``) is one. ``restate_prefix`` checks a
configured prefix (``SNAPLEDGER_RESTATE_PREFIXES``; the deploy's synth checks it too). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts import restate_keys as restate
from snapledger.layouts.strategy import SnapshotFolder

#: Prefixes snapledger writes itself: no Restate prefix may be inside one, or hold one.
_RESERVED = (native.SNAPSHOTS, native.CHANGELOG, native.RESTORES)


@dataclass(frozen=True, slots=True)
class RestatePrefix:
    """A stream's Restate prefix: its partitions' folders and pointers."""

    stream: str
    prefix: str  # normalized (``restate.normalize_prefix``)

    @property
    def stream_root(self) -> str:
        return f"{self.prefix}/"

    def root(self, partition: int) -> str:
        return restate.partition_prefix(self.prefix, partition)

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        parsed = restate.parse_snapshot_object_key(prefix + restate.METADATA_NAME, self.prefix)
        if parsed is None or parsed[0].partition != partition:
            return None
        location = parsed[0]
        return SnapshotFolder(prefix, location.lsn, location.snapshot_id, location.metadata_key)

    def latest_key(self, partition: int) -> str:
        return restate.latest_pointer_key(self.prefix, partition)


@dataclass(frozen=True, slots=True)
class RestateArrival:
    """A Restate ``metadata.json`` key, placed: its stream's prefix and where it is."""

    layout: RestatePrefix
    location: restate.RestateLocation

    @property
    def stream(self) -> str:
        return self.layout.stream


def restate_prefix(raw_prefix: str, stream: str) -> RestatePrefix:
    """A configured prefix (``SNAPLEDGER_RESTATE_PREFIXES``) of a stream, checked."""
    try:
        native.check_stream_name(stream)
        prefix = restate.normalize_prefix(raw_prefix)
    except (InvalidKeyError, ValueError) as exc:
        raise InvalidRequestError(f"Restate prefix {raw_prefix!r} → {stream!r}: {exc}") from exc
    if not prefix:
        raise InvalidRequestError(
            f"Restate prefix {raw_prefix!r} is the bucket's root: give the cluster a prefix "
            "(e.g. restate/prod-1) so its objects stay apart from snapledger's own"
        )
    top = prefix.split("/", 1)[0]
    if top in _RESERVED:
        raise InvalidRequestError(
            f"Restate prefix {prefix!r} is inside {top}/, which snapledger writes itself: "
            "choose a prefix outside snapshots/, changelog/ and restores/ (e.g. restate/prod-1)"
        )
    return RestatePrefix(stream=stream, prefix=prefix)
