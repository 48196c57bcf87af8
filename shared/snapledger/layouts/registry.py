"""The registry of layouts: every layout snapledger reads, once, with its facts.

One ``Registered`` per layout, in ``REGISTRY``. Everything that was a hand-kept list per
layout derives from it: the layout names (``LAYOUT_NAMES``), who owns each one's pointer
(``POINTER_OWNERS``), the object names a producer writes last (``MANIFEST_NAMES``), any
layout's snapshot id (``SNAPSHOT_ID_PATTERN``), which layouts have a bucket prefix of their
own (``ROOTED``: the prefixes registration listens on and the grants per prefix, in infra)
and how an entry of the layout map is checked (``layouts/layout_map.py``). The strategy
itself (``strategies/``, above the services) is named by its module and class
(``strategy``): the catalog (``strategies/catalog.py``) imports it from there, so this
module stays pure and below the services that read the facts.

Adding a layout: its strategy module, one ``Registered`` line here (docs/layouts.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from snapledger import layout as native
from snapledger.errors import InvalidKeyError, InvalidRequestError
from snapledger.layouts import PointerOwner, fluss_keys, restate_keys

#: How a layout's entries in the layout map are keyed: by the stream (its snapshots are
#: under ``snapshots/{stream}/``), or by a bucket prefix of its own holding one stream.
Keyed = Literal["stream", "prefix"]

#: Kafka Streams names every store's changelog topic ``{application.id}-{store}-changelog``.
CHANGELOG_SUFFIX = "-changelog"


@dataclass(frozen=True, slots=True)
class PrefixGrants:
    """What the functions do under a rooted layout's own prefix, as IAM key patterns
    relative to it (``*`` crosses '/'): the stack grants exactly these, per prefix of the
    layout map (infra/constructs/function_roles.py), and tests/deployed runs each path."""

    #: The functions that read the layout's objects there (GetObject) and list it.
    readers: tuple[str, ...]
    #: The objects gc deletes (its snapshot folders' objects; never the producer's pointer).
    deleted: str
    #: The producer's pointer, which gc rewrites only by compare-and-swap (If-Match).
    pointers: str | None = None
    #: A key named like the pointer but deeper than its place: denied to every writer.
    deeper_pointers: str | None = None


@dataclass(frozen=True, slots=True)
class Registered:
    """One layout: its name, its facts and where its strategy is."""

    name: str
    #: ``module:Class`` of its strategy (``strategies/``): built with ``(stream)``, or
    #: ``(stream, prefix)`` when ``keyed`` is "prefix".
    strategy: str
    owner: PointerOwner
    manifest_name: str
    #: A regular expression every snapshot id of the layout matches.
    id_pattern: str
    keyed: Keyed = "stream"
    #: Checks a map entry's key (a stream, or a prefix for ``keyed="prefix"``): returns it
    #: normalized, or raises ``ValueError``/``InvalidKeyError`` saying what is wrong.
    check_key: Callable[[str], str] = native.check_stream_name
    #: A rooted layout's grants under its prefix (None: it has no prefix of its own).
    grants: PrefixGrants | None = None
    #: Its producer writes snapshots to an S3 endpoint only (Restate refuses file://): the
    #: local registry must serve one (``local up --s3-port``).
    s3_only: bool = False

    @property
    def rooted(self) -> bool:
        """A layout with a bucket prefix of its own (outside ``snapshots/``)."""
        return self.keyed == "prefix"


def changelog_topic(stream: str) -> str:
    """A Kafka Streams stream, checked: a store's changelog topic's name."""
    native.check_stream_name(stream)
    application_and_store = stream.removesuffix(CHANGELOG_SUFFIX)
    if not stream.endswith(CHANGELOG_SUFFIX) or "-" not in application_and_store.strip("-"):
        raise InvalidKeyError(
            f"{stream!r} is not a changelog topic's name: Kafka Streams names a store's "
            "changelog {application.id}-{store}-changelog (e.g. totals-app-totals-changelog); "
            "give that topic's name"
        )
    return stream


#: Prefixes snapledger writes itself: no layout's own prefix may be inside one, or hold one.
RESERVED_PREFIXES = (native.SNAPSHOTS, native.CHANGELOG, native.RESTORES)


def own_prefix(raw: str) -> str:
    """A bucket prefix a rooted layout writes under, normalized and checked: not the root,
    not inside what snapledger writes itself."""
    prefix = restate_keys.normalize_prefix(raw)
    if not prefix:
        raise InvalidKeyError(
            "it is the bucket's root: give the producer a prefix (e.g. restate/prod-1) so "
            "its objects stay apart from snapledger's own"
        )
    top = prefix.split("/", 1)[0]
    if top in RESERVED_PREFIXES:
        raise InvalidKeyError(
            f"{prefix!r} is inside {top}/, which snapledger writes itself: choose a prefix "
            "outside snapshots/, changelog/ and restores/ (e.g. restate/prod-1)"
        )
    return prefix


def fluss_table_prefix(raw: str) -> str:
    """A Fluss table's KV folder (``.../kv/{db}/{table}-{table_id}``), checked as every
    rooted layout's prefix is."""
    return fluss_keys.table_of_prefix(own_prefix(raw)).prefix


REGISTRY: tuple[Registered, ...] = (
    Registered(
        "native",
        "snapledger.strategies.native:NativeLayout",
        "snapledger",
        native.MANIFEST_NAME,
        native.ULID_PATTERN,
    ),
    Registered(
        "restate",
        "snapledger.strategies.restate:RestateLayout",
        restate_keys.POINTER_OWNER,
        restate_keys.METADATA_NAME,
        restate_keys.SNAPSHOT_ID_PATTERN,
        keyed="prefix",
        check_key=own_prefix,
        grants=PrefixGrants(
            readers=("register", "gc"),
            deleted="*/lsn_*",
            pointers=f"*/{restate_keys.LATEST_NAME}",
            deeper_pointers=f"*/*/{restate_keys.LATEST_NAME}",
        ),
        s3_only=True,
    ),
    Registered(
        "kafka-streams",
        "snapledger.strategies.kafka_streams:KafkaStreamsLayout",
        "snapledger",
        native.MANIFEST_NAME,
        native.ULID_PATTERN,
        check_key=changelog_topic,
    ),
    Registered(
        fluss_keys.NAME,
        "snapledger.strategies.fluss_kv:FlussKvLayout",
        fluss_keys.POINTER_OWNER,
        fluss_keys.METADATA_NAME,
        fluss_keys.SNAPSHOT_ID_PATTERN,
        keyed="prefix",
        check_key=fluss_table_prefix,
        grants=PrefixGrants(readers=("register", "gc"), deleted="*/*"),
    ),
)

#: The default layout: every stream the map does not name.
DEFAULT_LAYOUT = "native"
LAYOUTS: dict[str, Registered] = {r.name: r for r in REGISTRY}
LAYOUT_NAMES: tuple[str, ...] = tuple(LAYOUTS)
POINTER_OWNERS: dict[str, PointerOwner] = {r.name: r.owner for r in REGISTRY}
#: The object names a producer writes last in a snapshot's folder (GC deletes them last).
MANIFEST_NAMES: tuple[str, ...] = tuple(dict.fromkeys(r.manifest_name for r in REGISTRY))
#: Any layout's snapshot id.
SNAPSHOT_ID_PATTERN = "(?:" + "|".join(dict.fromkeys(r.id_pattern for r in REGISTRY)) + ")"
#: The layouts with a bucket prefix of their own.
ROOTED: tuple[str, ...] = tuple(r.name for r in REGISTRY if r.rooted)


def registered(name: object) -> Registered:
    """The layout named ``name``, or ``InvalidRequestError`` listing the known ones."""
    found = LAYOUTS.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidRequestError(
            f"unknown layout {name!r}: snapledger reads {', '.join(LAYOUT_NAMES)}"
        )
    return found
