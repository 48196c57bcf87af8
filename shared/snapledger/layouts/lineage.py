"""A lineage's layout: where its snapshots' folders are, and how to read one's name.

Registration, GC, the orphan sweep and heal ask a ``LineageLayout`` (from the
``LayoutCatalog``) instead of assuming snapledger's own keys, so a foreign layout is one
module (``layouts/restate.py``) plus a class here, not a fork of those services:

- ``root(partition)``: the folder every snapshot of the lineage is directly under (one
  listing sees them all);
- ``folder(partition, prefix)``: the snapshot a folder under the root holds (its LSN, id and
  manifest key), or None when the folder is not a snapshot's (not ours: never touched);
- ``manifest_name``: the object that describes a snapshot (written last by its producer;
  deleted last by GC);
- ``owner``: who writes the lineage's pointer object (``latest.json``).

The catalog maps each configured Restate prefix to the stream its partitions belong to
(``SNAPLEDGER_RESTATE_PREFIXES``, the deploy parameter ``-c restatePrefixes``); every other
stream has the native layout. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts import restate_keys as restate

#: The object names a producer writes last in a snapshot's folder (GC deletes them last).
MANIFEST_NAMES = (native.MANIFEST_NAME, restate.METADATA_NAME)
#: Any layout's snapshot id: a ULID (native) or Restate's ``snap_`` and base62 digits.
SNAPSHOT_ID_PATTERN = rf"(?:{native.ULID_PATTERN}|{restate.SNAPSHOT_ID_PATTERN})"
#: Prefixes snapledger writes itself: no Restate prefix may be inside one, or hold one.
_RESERVED = (native.SNAPSHOTS, native.CHANGELOG, native.RESTORES)


@dataclass(frozen=True, slots=True)
class SnapshotFolder:
    """One snapshot's folder in a lineage, as its layout reads it."""

    prefix: str  # with a trailing slash
    lsn: int
    snapshot_id: str
    manifest_key: str


def folder_of_manifest(manifest_key: str) -> str:
    """The folder of the snapshot whose manifest (or ``metadata.json``) is at the key, with
    its trailing slash: every layout keeps a snapshot's manifest directly in its folder."""
    folder, slash, _ = manifest_key.rpartition("/")
    if not slash:
        raise InvalidKeyError(f"{manifest_key!r} is in no folder: it is no snapshot's manifest")
    return folder + "/"


class LineageLayout(Protocol):
    """How one stream's lineages lay their snapshots out (see the module docstring)."""

    @property
    def name(self) -> LayoutName: ...

    @property
    def owner(self) -> PointerOwner: ...

    @property
    def manifest_name(self) -> str: ...

    @property
    def stream(self) -> str: ...

    def root(self, partition: int) -> str: ...

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None: ...


@dataclass(frozen=True, slots=True)
class NativeLayout:
    """snapledger's own: ``snapshots/{stream}/{partition}/{lsn:020d}-{ulid}/_manifest.json``."""

    stream: str
    name: LayoutName = "native"
    owner: PointerOwner = "snapledger"
    manifest_name: str = native.MANIFEST_NAME

    def root(self, partition: int) -> str:
        return native.lineage_snapshots_prefix(self.stream, partition)

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        try:
            location = native.parse_snapshot_prefix(prefix)
        except InvalidKeyError:
            return None
        if (location.stream, location.partition) != (self.stream, partition):
            return None
        return SnapshotFolder(
            prefix, location.lsn, location.snapshot_id, prefix + native.MANIFEST_NAME
        )


@dataclass(frozen=True, slots=True)
class RestateLayout:
    """Restate 1.7's: ``{prefix}/{partition}/lsn_{lsn:020d}-{snap_id}/metadata.json``."""

    stream: str
    prefix: str  # normalized (``restate.normalize_prefix``)
    name: LayoutName = "restate"
    owner: PointerOwner = restate.POINTER_OWNER
    manifest_name: str = restate.METADATA_NAME

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
    """A Restate ``metadata.json`` key, placed: its stream and where it is."""

    layout: RestateLayout
    location: restate.RestateLocation

    @property
    def stream(self) -> str:
        return self.layout.stream


class LayoutCatalog:
    """Each stream's layout: Restate for the configured prefixes, native for the rest."""

    def __init__(self, restate_prefixes: Mapping[str, str] | None = None) -> None:
        self._restate: dict[str, RestateLayout] = {}  # stream -> its layout
        for raw_prefix, stream in (restate_prefixes or {}).items():
            layout = _restate_layout(raw_prefix, stream)
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

    @property
    def restate_layouts(self) -> tuple[RestateLayout, ...]:
        return tuple(self._restate[s] for s in sorted(self._restate))

    def for_stream(self, stream: str) -> LineageLayout:
        return self._restate.get(stream) or NativeLayout(stream)

    def restate_for(self, stream: str) -> RestateLayout | None:
        return self._restate.get(stream)

    def locate_restate(self, key: str) -> RestateArrival | None:
        """The Restate snapshot whose ``metadata.json`` is at ``key``, or None if ``key`` is
        not one under a configured prefix."""
        for layout in self._restate.values():
            location = restate.parse_restate_key(key, layout.prefix)
            if location is not None:
                return RestateArrival(layout, location)
        return None

    def under_restate(self, key: str) -> RestateLayout | None:
        """The Restate layout whose prefix holds ``key`` (any object), or None."""
        for layout in self._restate.values():
            if key.startswith(layout.prefix + "/"):
                return layout
        return None


NATIVE_ONLY = LayoutCatalog()


def _restate_layout(raw_prefix: str, stream: str) -> RestateLayout:
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
    return RestateLayout(stream=stream, prefix=prefix)


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")
