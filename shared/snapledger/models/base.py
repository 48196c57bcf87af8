"""The base of every wire model: frozen, strict about unknown fields, stable names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable model that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Stored(BaseModel):
    """An item the ledger stored: frozen; fields a newer version added are ignored, so an
    older reader (a function not yet redeployed) still reads it."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)
