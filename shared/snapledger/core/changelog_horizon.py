"""Whether a changelog can still continue a snapshot made from it: the one rule GC's
restorable check (``strategies/kafka_streams.py``), the seed, the snapshotter's base and the
generation rewind (``snapledger.kafka_streams``) all apply (docs/kafka-streams.md,
"Which snapshots the changelog can continue").

- **Incarnation**: a snapshot is continued only by the incarnation of the topic it was made
  from. A topic deleted and recreated under the same name (Kafka's application reset) has
  another topic id and restarts its offsets at 0, so an offset of the old topic says nothing
  about the new one. A snapshot that names no topic id (written before releases recorded
  it) is taken to be of the current incarnation, as it always was.
- **Horizon**: compaction may drop a tombstone once it is ``delete.retention.ms`` (R) old.
  A snapshot whose changelog was read at T is continuable at ``now`` only while
  ``now - T < R - horizon_margin(R)``: a boot from it still reads every tombstone written
  after it. The margin covers the clocks of the snapshotter, the broker and the reader
  disagreeing and the time a boot takes to read the changelog's tail: 10% of R, at least
  ``MIN_HORIZON_MARGIN`` (1 minute), and at most half of R, so every R > 0 leaves a window
  (R = 1 day: 2.4 h margin; R = 10 min: 1 min; R = 1 min: 30 s; R = 0: none).
"""

from __future__ import annotations

from datetime import datetime, timedelta

#: The margin is this fraction of ``delete.retention.ms``...
HORIZON_MARGIN_FRACTION = 0.1
#: ...at least this (clock skew and a boot's read of the tail)...
MIN_HORIZON_MARGIN = timedelta(minutes=1)
#: ...and at most this fraction of it, so every ``delete.retention.ms`` > 0 leaves a window.
MAX_HORIZON_MARGIN_FRACTION = 0.5


def horizon_margin(delete_retention_ms: int) -> timedelta:
    """How long before ``delete.retention.ms`` a snapshot stops being continuable."""
    retention = timedelta(milliseconds=delete_retention_ms)
    return min(
        max(retention * HORIZON_MARGIN_FRACTION, MIN_HORIZON_MARGIN),
        retention * MAX_HORIZON_MARGIN_FRACTION,
    )


def horizon_window(delete_retention_ms: int) -> timedelta:
    """How long after its changelog was read a snapshot stays continuable."""
    return timedelta(milliseconds=delete_retention_ms) - horizon_margin(delete_retention_ms)


def past_horizon(read_at: datetime, now: datetime, delete_retention_ms: int) -> str | None:
    """Why a snapshot whose changelog was read at ``read_at`` can no longer be continued at
    ``now`` (compaction may have dropped tombstones written after it), or None."""
    age = now - read_at
    window = horizon_window(delete_retention_ms)
    if age < window:
        return None
    return (
        f"read {age.total_seconds():,.0f} s ago, not younger than the topic's "
        f"delete.retention.ms ({delete_retention_ms:,} ms) less its margin "
        f"({horizon_margin(delete_retention_ms).total_seconds():,.0f} s): compaction may have "
        "dropped tombstones written after it, and a boot from it could bring deleted keys back"
    )


def other_incarnation(
    topic: str, snapshot_topic_id: str | None, topic_id: str | None
) -> str | None:
    """Why a snapshot naming ``snapshot_topic_id`` is of another incarnation of ``topic``
    than the one whose id is ``topic_id``, or None (the same, or either not known)."""
    if snapshot_topic_id is None or topic_id is None or snapshot_topic_id == topic_id:
        return None
    return (
        f"made from another incarnation of the changelog: {topic} had topic id "
        f"{snapshot_topic_id}, its current one is {topic_id} (the topic was deleted and "
        "recreated, its offsets restarted)"
    )
