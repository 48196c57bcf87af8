"""A Fluss writer of ours that uses the producer-offsets registry as Fluss's Flink sink does
(apache/fluss#2434): before it writes, it registers the log end offset of every bucket of
its table; a restart that finds its registration (ALREADY_EXISTS: an earlier attempt failed
before its first checkpoint) undoes every change after those offsets from the table's
changelog before-images (the client program's ``undo``); after its first checkpoint it
deletes the registration. The writes themselves are the client program's ``write`` (a
process that waits, after writing, for a checkpoint that never comes)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapledger.client.control import Snapledger
from snapledger.client.producer_offsets_actions import offsets_of
from snapledger.local.fluss_probe import FlussProbe


@dataclass(frozen=True)
class Start:
    """What a writer's start found: ``result`` (CREATED: a first attempt; ALREADY_EXISTS:
    a restart), the registered offsets (bucket -> offset) and the undo's counts, if any."""

    result: str
    offsets: dict[int, int]
    undone: dict[str, int] | None = None


class FlussUndoWriter:
    """Writes to one table of a Fluss cluster as producer ``producer_id``."""

    def __init__(
        self, registry: Snapledger, probe: FlussProbe, table_id: int, producer_id: str
    ) -> None:
        self.registry = registry
        self.probe = probe
        self.table_id = table_id
        self.producer_id = producer_id

    def start(self) -> Start:
        """Register the table's current end offsets; if an earlier attempt's registration
        stands, undo what was written after its offsets instead (they stay registered)."""
        ends = self.probe.offsets()
        answer = self.registry.register_producer_offsets(
            self.producer_id, {(self.table_id, bucket): end for bucket, end in ends.items()}
        )
        offsets = self._mine(answer["entry"])
        if answer["result"] == "CREATED":
            return Start("CREATED", offsets)
        return Start("ALREADY_EXISTS", offsets, undone=self.probe.undo(offsets))

    def _mine(self, entry: dict[str, Any]) -> dict[int, int]:
        return {
            bucket: offset
            for (table, _partition, bucket), offset in offsets_of(entry).items()
            if table == self.table_id
        }

    def write(
        self, upsert: tuple[int, int], delete: tuple[int, int], version: int, log: Path
    ) -> subprocess.Popen[str]:
        """Upsert and delete rows (the client program's ``write``, which then waits)."""
        return self.probe.start_writer(upsert, delete, version, log)

    def checkpointed(self) -> bool:
        """The first checkpoint is done: the registration goes (deleted: it existed)."""
        return bool(self.registry.delete_producer_offsets(self.producer_id)["deleted"])
