"""When is a lineage due for compaction? Pure: counts since the latest snapshot vs thresholds.

Records are counted as LSN spans (``last - first + 1`` of each segment past the latest
snapshot): exact when LSNs are dense, an upper bound when they have holes. Thresholds are
per stream; never wall-clock periodic.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field

from snapledger.models.base import Frozen


class CompactionThresholds(Frozen):
    """Compact once either is crossed since the latest snapshot."""

    records: int = Field(default=1_000_000, ge=1)
    bytes: int = Field(default=256 * 1024 * 1024, ge=1)


class CompactionConfig(Frozen):
    """Thresholds per stream, with a default for streams not named."""

    default: CompactionThresholds = Field(default_factory=CompactionThresholds)
    streams: dict[str, CompactionThresholds] = Field(default_factory=dict)

    def for_stream(self, stream: str) -> CompactionThresholds:
        return self.streams.get(stream, self.default)


@dataclass(frozen=True)
class Backlog:
    records: int
    bytes: int
    segments: int


def backlog_since(latest_lsn: int | None, segments: Iterable[tuple[int, int, int]]) -> Backlog:
    """Records, bytes and segments of the changelog past ``latest_lsn``."""
    records = size = count = 0
    for first, last, seg_bytes in segments:
        start = first if latest_lsn is None else max(first, latest_lsn + 1)
        if last < start:
            continue
        records += last - start + 1
        # A segment straddling the snapshot counts its bytes in proportion.
        span = last - first + 1
        size += seg_bytes * (last - start + 1) // span
        count += 1
    return Backlog(records=records, bytes=size, segments=count)


def due(backlog: Backlog, thresholds: CompactionThresholds) -> bool:
    return backlog.records >= thresholds.records or backlog.bytes >= thresholds.bytes
