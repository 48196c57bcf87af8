"""What a registration of snapshots that reference files reads besides its own record:
the records of the files referenced (``core/references.py``), found with one listing of the
lineage's live records (REGISTERED, EXPIRING and REJECTED; paged), only when a manifest of
the batch has references."""

from __future__ import annotations

from collections.abc import Sequence

from snapledger.core.references import related_sort_keys
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.ledger import LineageId
from snapledger.ports import Ledger
from snapledger.services.queries import live_snapshots


def reference_keys(ledger: Ledger, commands: Sequence[RegisterSnapshot]) -> list[tuple[str, ...]]:
    """For each command (of one lineage), the other records its decision reads (none
    without references)."""
    if not any(c.summary is not None and c.summary.references for c in commands):
        return [() for _ in commands]
    live = live_snapshots(
        ledger, LineageId(stream=commands[0].stream, partition=commands[0].partition)
    )
    return [
        related_sort_keys(c.summary.references, live)
        if c.summary is not None and c.summary.references
        else ()
        for c in commands
    ]
