"""The client's own errors: a snapshot whose files are not what its descriptor says, and a
snapshot asked for in a form its format cannot give.

Both are :class:`snapledger.errors.SnapledgerError`, so a caller can handle every error
snapledger raises on purpose with one ``except``. This module imports nothing heavy:
``except SnapshotCorruptError`` costs no pyarrow import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from snapledger.errors import InvalidRequestError, SnapledgerError

#: What is wrong with one file: absent, another size, another checksum, or not readable as
#: the snapshot's format says (e.g. a kv-parquet file without the kv columns).
ProblemKind = Literal["missing", "size", "checksum", "unreadable", "path"]
_SHOWN_PROBLEMS = 5


@dataclass(frozen=True, slots=True)
class FileProblem:
    """One file of a snapshot that is not as its descriptor states.

    ``expected`` is what the descriptor says (a size, a checksum), ``actual`` what the store
    holds (None when the file is absent).
    """

    path: str
    kind: ProblemKind
    expected: str
    actual: str | None

    def __str__(self) -> str:
        if self.kind == "missing":
            return f"{self.path}: missing from the store (the descriptor lists {self.expected})"
        if self.kind in ("unreadable", "path"):
            return f"{self.path}: {self.actual}"
        return (
            f"{self.path}: the descriptor's {self.kind} is {self.expected}, "
            f"the store's is {self.actual}"
        )


class SnapshotCorruptError(SnapledgerError):
    """A snapshot (or restore) is not what its descriptor says: a file is missing, has
    another size or checksum, cannot be read, or the descriptor itself is unreadable.

    ``problems`` lists each file at fault with both values. Do not use the snapshot: open
    another (an older snapshot, or restore again), and tell its producer.
    """

    def __init__(self, where: str, problems: Sequence[FileProblem] = (), detail: str = "") -> None:
        self.where = where
        self.problems = tuple(problems)
        shown = "; ".join(str(p) for p in self.problems[:_SHOWN_PROBLEMS])
        more = len(self.problems) - _SHOWN_PROBLEMS
        if more > 0:
            shown += f"; and {more} more file(s)"
        reason = "; ".join(part for part in (detail, shown) if part)
        super().__init__(
            f"snapshot {where} is corrupt: {reason}. Do not use it: open another snapshot "
            "(or restore again) and tell its producer"
        )


class PointerRefusedError(SnapshotCorruptError):
    """A pointer object (``latest.json``, ``generation.json``) the reader will not follow:
    it is not a pointer (not JSON, too large, nested too deep, not format v1) or it names
    another lineage's (or stream's) snapshot, or one away from its own key
    (``snapshots/{stream}/{partition}/{lsn:020d}-{id}/``): planted, or copied from
    elsewhere. ``asked`` is the lineage or stream asked for, ``reason`` what is wrong.

    A kind of :class:`SnapshotCorruptError`. Do not follow it: ask the registry for the
    latest (``Snapledger.latest``, ``snapledger latest``), and tell whoever owns the bucket;
    snapledger rewrites the pointer at the lineage's next registration.
    """

    def __init__(self, where: str, asked: str, reason: str) -> None:
        self.where = where
        self.problems = ()
        self.asked = asked
        self.reason = reason
        SnapledgerError.__init__(
            self,
            f"pointer {where} refused for {asked}: {reason}. Do not follow it (it may have "
            "been planted or copied from another lineage): ask the registry for the latest "
            "(Snapledger.latest, `snapledger latest`) and tell the bucket's owner; snapledger "
            "rewrites the pointer from its ledger at the next registration",
        )


class SnapshotFormatError(InvalidRequestError):
    """The snapshot's format cannot be read the way asked (e.g. ``to_arrow`` on ``opaque``)."""
