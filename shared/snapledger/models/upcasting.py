"""Stored events of an older version, read as the current one: the upcasters.

Every event type has a version, ``schema_version`` on its model (1 unless its model says
otherwise); each stored ``EV#`` item carries the version it was written at (docs/ledger.md,
"Stored events and their versions"); an item an earlier release wrote without one is
version 1. Reading passes the item's fields through the type's upcasters, one per version
step, from the stored version to the current one, before the model validates them; so a
field renamed or retyped in a later release never strands an event already stored.

An upcaster is declared for (event type, the version it reads) and is a pure function of
the stored fields (a ``dict``, as the item holds them: absent optional fields are left
out) to the next version's; a renamed type is declared by its old name. Both are declared
beside the event class in ``models/events.py`` (``models/event_evolution.py``). A stored
item's ``type`` is renamed first, then its version upcast. The chain of every type is
checked when this module is imported: a type at version n has exactly the upcasters from 1
to n-1, and none for a type that does not exist or a version it does not have; an old name
is no current type and leads to one.
"""

from collections.abc import Mapping

from snapledger.errors import SnapledgerError
from snapledger.models.bus_events import event_type_name, ledger_event_models
from snapledger.models.event_evolution import (
    RENAMED_TYPES,
    UPCASTERS,
    Fields,
    UpcasterChainError,
    current_type_name,
    upcaster,
)
from snapledger.models.events import EventBase, StreamEventBase

__all__ = ["UpcasterChainError", "upcaster"]  # declared in event_evolution, beside the events

#: The version of an event stored without one: every item written before versions were.
UNVERSIONED = 1
#: The declared upcasters (``models/events.py`` declares them, beside their classes).
_UPCASTERS = UPCASTERS


class EventVersionError(SnapledgerError):
    """A stored event's version is not one this release can read (newer, or not a version)."""


def current_versions() -> dict[str, int]:
    """``{type: version}`` of every event type of both logs, as this release writes it."""
    versions = {}
    for model in ledger_event_models():
        if not issubclass(model, EventBase | StreamEventBase):  # pragma: no cover
            raise TypeError(f"{model.__name__} is in an event union but is not an event")
        versions[event_type_name(model)] = model.schema_version
    return versions


def upcast(fields: Fields, stored_version: int) -> Fields:
    """``fields`` of an event stored at ``stored_version``, as its current version has
    them: a renamed type's under its current name, then through the type's upcasters. A
    type this release does not know is returned as it is (validation says so)."""
    event_type = fields.get("type")
    if not isinstance(event_type, str):
        return fields
    if current_type_name(event_type) != event_type:
        event_type = current_type_name(event_type)
        fields = {**fields, "type": event_type}
    if event_type not in CURRENT_VERSIONS:
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


def rename_problems(versions: Mapping[str, int], renames: Mapping[str, str]) -> list[str]:
    """What is wrong with ``renames``: an old name still a current type (a name is never
    reused), a new name that is no current type (a rename leads to one in one step)."""
    problems = []
    for old, new in sorted(renames.items()):
        if old in versions:
            problems.append(f"{old!r} is renamed to {new!r} but is still an event type")
        if new not in versions:
            problems.append(f"{old!r} is renamed to {new!r}, which is not an event type")
    return problems


def check_chains(
    versions: Mapping[str, int],
    upcasters: Mapping[tuple[str, int], object],
    renames: Mapping[str, str] = RENAMED_TYPES,
) -> None:
    """Refuse a gap or a stray step in the upcasters, and a rename that does not lead to a
    current type: run when this module is imported, so a release with a broken chain fails
    its first import, in CI and at a cold start."""
    problems = chain_problems(versions, upcasters) + rename_problems(versions, renames)
    if problems:
        raise UpcasterChainError(
            "the event upcasters do not lead every stored event to a current one: "
            + "; ".join(problems)
            + ". Declare one @upcaster per version step of each type, and renamed_type(old, "
            "Model) per renamed type, beside the event class (models/events.py)"
        )


#: ``{type: version}``: what this release writes, and reads up to.
CURRENT_VERSIONS = current_versions()
check_chains(CURRENT_VERSIONS, _UPCASTERS)
