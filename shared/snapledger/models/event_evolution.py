"""How events stored by an earlier release are read: their upcasters and renamed types,
declared beside the event classes (``models/events.py``), applied when a stored item is
read (``models/upcasting.py``) and checked when that module is imported.

- ``@upcaster(Model, from_version=n)``: the pure function turning ``Model``'s stored fields
  at version n into those of version n + 1 (a field renamed or retyped).
- ``renamed_type("OldName", Model)``: items stored with ``type`` ``OldName`` read as
  ``Model``'s type; the type's stored version then applies to ``Model``'s chain. A type is
  renamed, never reused: the old name may not be a current type.

This module imports no event class, so ``models/events.py`` declares both right below each
class they concern.
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

Fields = dict[str, Any]
Upcaster = Callable[[Fields], Fields]

#: ``{(type, from_version): upcaster}``, as declared.
UPCASTERS: dict[tuple[str, int], Upcaster] = {}
#: ``{old type name: current type name}``, as declared.
RENAMED_TYPES: dict[str, str] = {}


class UpcasterChainError(TypeError):
    """The declared upcasters or renames do not lead every stored event to a current one."""


def type_name(model: type[BaseModel]) -> str:
    """The ``type`` a model's events carry (its discriminator's default)."""
    name = model.model_fields["type"].default
    if not isinstance(name, str):  # pragma: no cover - every event model has a type literal
        raise TypeError(f"{model.__name__} has no default 'type'")
    return name


def upcaster(model: type[BaseModel], from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Declare the function that turns ``model``'s stored fields at ``from_version`` into
    those of ``from_version + 1``."""
    key = (type_name(model), from_version)

    def register(function: Upcaster) -> Upcaster:
        if key in UPCASTERS:
            raise UpcasterChainError(f"{key[0]} v{from_version} has two upcasters")
        UPCASTERS[key] = function
        return function

    return register


def renamed_type(old_name: str, model: type[BaseModel]) -> None:
    """Declare that events stored with ``type`` ``old_name`` are ``model``'s."""
    if old_name in RENAMED_TYPES:
        raise UpcasterChainError(
            f"{old_name!r} is renamed twice ({RENAMED_TYPES[old_name]}, {type_name(model)})"
        )
    RENAMED_TYPES[old_name] = type_name(model)


def current_type_name(stored_type: str) -> str:
    """The type an item stored with ``type`` ``stored_type`` is read as."""
    return RENAMED_TYPES.get(stored_type, stored_type)
