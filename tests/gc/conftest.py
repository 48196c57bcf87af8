"""GC tests reuse the ledger fixtures (moto and DynamoDB Local, file:// store, manual clock)."""

from __future__ import annotations

from tests.ledger.conftest import clock, ledger, store

__all__ = ["clock", "ledger", "store"]
