"""Stored events of an older version, read as the current one: the upcasters.

Every event type has a version, ``schema_version`` on its model (1 unless its model says
otherwise); each stored ``EV#`` item carries the version it was written at (docs/ledger.md,
"Stored events and their versions"); an item an earlier release wrote without one is
version 1. Reading passes the item's fields through the type's upcasters, one per version
step, from the stored version to the current one, before the model validates them; so a
field renamed or retyped in a later release never strands an event already stored.

An upcaster is declared for (event type, the version it reads) and is a pure function of
the stored fields (a ``dict``, as the item holds them: absent optional fields are left
out) to the next version's. The chain of every type is checked when this module is
imported: a type at version n has exactly the upcasters from 1 to n-1, and none for a type
that does not exist or a version it does not have.
"""

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from snapledger.errors import SnapledgerError
from snapledger.models.bus_events import event_type_name, ledger_event_models
from snapledger.models.events import EventBase, StreamEventBase, StreamSnapshotCompleted

Fields = dict[str, Any]
Upcaster = Callable[[Fields], Fields]
#: The version of an event stored without one: every item written before versions were.
UNVERSIONED = 1

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class EventVersionError(SnapledgerError):
    """A stored event's version is not one this release can read (newer, or not a version)."""


class UpcasterChainError(TypeError):
    """The declared upcasters do not lead every stored version to the current one."""


def current_versions() -> dict[str, int]:
    """``{type: version}`` of every event type of both logs, as this release writes it."""
    versions = {}
    for model in ledger_event_models():
        if not issubclass(model, EventBase | StreamEventBase):  # pragma: no cover
            raise TypeError(f"{model.__name__} is in an event union but is not an event")
        versions[event_type_name(model)] = model.schema_version
    return versions


def upcaster(model: type[BaseModel], from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Declare the function that turns ``model``'s stored fields at ``from_version`` into
    those of ``from_version + 1``."""
    key = (event_type_name(model), from_version)

    def register(function: Upcaster) -> Upcaster:
        if key in _UPCASTERS:
            raise UpcasterChainError(f"{key[0]} v{from_version} has two upcasters")
        _UPCASTERS[key] = function
        return function

    return register


def upcast(fields: Fields, stored_version: int) -> Fields:
    """``fields`` of an event stored at ``stored_version``, as its current version has
    them. A type this release does not know is returned as it is (validation says so)."""
    event_type = fields.get("type")
    if not isinstance(event_type, str) or event_type not in CURRENT_VERSIONS:
        return fields
    current = CURRENT_VERSIONS[event_type]
    if stored_version < UNVERSIONED:
        raise EventVersionError(
            f"a stored {event_type} event says it is version {stored_version}: versions "
            "start at 1. Repair the item (an item written by hand?)"
        )
    if stored_version > current:
        raise EventVersionError(
            f"a stored {event_type} event is version {stored_version}, and this release "
            f"reads {event_type} up to version {current}: it was written by a newer release "
            "of snapledger. Deploy that release (or a later one) to read it"
        )
    for version in range(stored_version, current):
        fields = _UPCASTERS[(event_type, version)](fields)
    return fields


def chain_problems(
    versions: Mapping[str, int], upcasters: Mapping[tuple[str, int], object]
) -> list[str]:
    """What is wrong with ``upcasters`` for event types at ``versions``: each missing
    step, each upcaster no stored version needs."""
    problems = []
    for event_type, version in sorted(versions.items()):
        if version < UNVERSIONED:
            problems.append(f"{event_type}: schema_version {version} (versions start at 1)")
        missing = [v for v in range(UNVERSIONED, version) if (event_type, v) not in upcasters]
        problems += [f"{event_type}: no upcaster from v{v} to v{v + 1}" for v in missing]
    for event_type, from_version in sorted(upcasters):
        current = versions.get(event_type)
        if current is None:
            problems.append(f"an upcaster for {event_type!r}, which is not an event type")
        elif not UNVERSIONED <= from_version < current:
            problems.append(
                f"{event_type}: an upcaster from v{from_version}, but the type is at "
                f"v{current} (upcasters go from v1 to v{current - 1})"
            )
    return problems


def check_chains(versions: Mapping[str, int], upcasters: Mapping[tuple[str, int], object]) -> None:
    """Refuse a gap or a stray step in the upcasters: run when this module is imported, so
    a release with a broken chain fails its first import, in CI and at a cold start."""
    problems = chain_problems(versions, upcasters)
    if problems:
        raise UpcasterChainError(
            "the event upcasters do not lead every stored version to the current one: "
            + "; ".join(problems)
            + ". Declare one @upcaster per version step of each type (models/upcasting.py)"
        )


# --- the upcasters -------------------------------------------------------------------------


@upcaster(StreamSnapshotCompleted, from_version=1)
def _members_name_their_partition(fields: Fields) -> Fields:
    """v2: each member's partition is ``partition`` (v1: ``member``), as in the generation
    record and ``generation.json``."""
    members = [
        {("partition" if name == "member" else name): value for name, value in member.items()}
        for member in fields.get("members", ())
    ]
    return {**fields, "members": members}


#: ``{type: version}``: what this release writes, and reads up to.
CURRENT_VERSIONS = current_versions()
check_chains(CURRENT_VERSIONS, _UPCASTERS)
