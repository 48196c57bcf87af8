"""The pydantic models ``snapledger.models`` declares: what the "declared once" tests scan."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from pydantic import BaseModel

import snapledger.models


def declared_models() -> list[type[BaseModel]]:
    """Every model class defined in a module of ``snapledger.models`` (not imported there)."""
    found: list[type[BaseModel]] = []
    for info in pkgutil.iter_modules(snapledger.models.__path__):
        module = importlib.import_module(f"snapledger.models.{info.name}")
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseModel) and value.__module__ == module.__name__:
                found.append(value)
    return found
