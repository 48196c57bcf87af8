"""The base of every wire model: frozen, strict about unknown fields, stable names."""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

#: For the module-level ``TypeAdapter``s of unions: their validators are built on first use,
#: as the models' are (``defer_build``), so a function's cold start pays only for the
#: models its path validates.
DEFERRED = ConfigDict(defer_build=True)


class Frozen(BaseModel):
    """Immutable model that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


class Stored(BaseModel):
    """An item the ledger stored: frozen; fields a newer version added are ignored, so an
    older reader (a function not yet redeployed) still reads it."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)


def one_of_error(fields: Sequence[str], problem: str) -> PydanticCustomError:
    """For a model validator: a problem that names its fields (e.g. give one of two), so
    the answer names them rather than the whole payload."""
    return PydanticCustomError("one_of", problem, {"fields": tuple(fields)})
