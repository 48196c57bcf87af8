"""The base of every wire model: frozen, strict about unknown fields, stable names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable model that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
