"""The Kafka Streams layout's strategy: a task's RocksDB store folder, snapshotted from its
changelog.

A stream of this layout is a Kafka Streams store's changelog topic (named
``{application.id}-{store}-changelog``; configured in ``SNAPLEDGER_KAFKA_STREAMS_STREAMS``,
checked by ``layouts/lineage.py``),
each partition a lineage. Its snapshots use the native keys and pointer
(``snapshots/{topic}/{partition}/{lsn:020d}-{ulid}/… _manifest.json``; snapledger owns
``latest.json``); the LSN is the changelog offset of the last record applied.

Registration runs the native checks (``services/manifest_checks.py``) and then these,
REJECTED with every reason found: format ``opaque``; ``offsets`` holding
``{"{topic}-{partition}": lsn}`` and otherwise only input topic-partitions (the input offsets
a generation-capable application's records carry), no other partition of the changelog;
every file a flat name (a store's RocksDB folder); every ``*.sst``
ends with RocksDB's block-based table magic (one ranged GET of its tail each, at most
``FILE_READERS`` at once: the Restate layout's check); with ``changelog``, an LSN below its
``end_offset`` and a ``created_at``.

Retention counts a snapshot as restorable only while the changelog can continue it: not
when it was made from another incarnation of the topic than the lineage's current one (the
topic id its manifest names is not the one named by the lineage's REGISTERED snapshot with
the highest (epoch, LSN) that names one: the topic was deleted and recreated), nor when
``lsn + 1`` is below the newest log-start offset any snapshot of the current incarnation
reported (the records after it are gone), nor once ``now - created_at`` reaches the topic's
``delete.retention.ms`` less its margin (compaction may since have dropped tombstones
written after it: a boot from it would bring deleted keys back): the horizon rule the seed and
the rewind apply too (``core/changelog_horizon.py``).
GC's steps are the native ones. A consumer boots with ``snapledger.kafka_streams.seed``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from snapledger import layout as keys
from snapledger.core.changelog_horizon import other_incarnation, past_horizon
from snapledger.layouts import LayoutName, PointerOwner
from snapledger.layouts.native_keys import NativeKeys
from snapledger.layouts.strategy import LineageFacts, Placed, broken_reason
from snapledger.models.commands import RegisterSnapshot
from snapledger.models.ledger import SnapshotRecord, SnapshotStatus
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds, ObjectStore
from snapledger.services.gc_steps import LineageSteps, NativeSteps, StepsContext
from snapledger.services.manifest_checks import command_for
from snapledger.services.restate_snapshots import sst_footers

#: A store's RocksDB folder (``{task}/rocksdb/{store}/``), as the snapshotter writes it and
#: the seed places it: flat file names (RocksDB keeps no sub-folders there).
_STORE_FILE = re.compile(r"[^/]+")


@dataclass(frozen=True, slots=True)
class KafkaStreamsLayout(NativeKeys):
    """A Kafka Streams changelog topic's snapshots: native keys, RocksDB store folders."""

    stream: str  # the changelog topic
    name: LayoutName = "kafka-streams"
    owner: PointerOwner = "snapledger"
    manifest_name: str = keys.MANIFEST_NAME
    boot: str = (
        "snapledger.kafka_streams.seed: the latest usable snapshot of each task placed in "
        "its empty state folder before KafkaStreams.start()"
    )

    def register_command(
        self, placed: Placed, store: ObjectStore, holds: ObjectHolds | None
    ) -> tuple[RegisterSnapshot, ManifestV1 | None]:
        return command_for(placed.location, placed.key, store, holds, extra=store_problems)

    def gc_steps(self, context: StepsContext) -> LineageSteps:
        return NativeSteps(context)

    def facts(self, records: Iterable[SnapshotRecord]) -> LineageFacts:
        reported = [
            (r, r.changelog)
            for r in records
            if r.changelog is not None and r.status is not SnapshotStatus.REJECTED
        ]
        naming = [
            (r.epoch or 0, r.lsn, c.topic_id)
            for r, c in reported
            if c.topic_id is not None and r.status is SnapshotStatus.REGISTERED
        ]
        current = max(naming, default=(0, 0, None))[2]
        starts = [
            c.log_start_offset for _, c in reported if current is None or c.topic_id == current
        ]
        return LineageFacts(log_start_offset=max(starts, default=None), topic_id=current)

    def unrestorable(
        self, record: SnapshotRecord, facts: LineageFacts, now: datetime
    ) -> str | None:
        broken = broken_reason(record)
        if broken is not None:
            return broken
        horizon = record.changelog
        named = None if horizon is None else horizon.topic_id
        other = other_incarnation(self.stream, named, facts.topic_id)
        if other is not None:
            return other
        start = facts.log_start_offset
        if start is not None and record.lsn + 1 < start:
            return (
                f"below the changelog's log start: it continues from offset {record.lsn + 1}, "
                f"and a snapshot of the lineage read log_start_offset {start}: the records "
                "after it are gone from the topic"
            )
        if horizon is None or horizon.delete_retention_ms is None or horizon.read_at is None:
            return None
        return past_horizon(horizon.read_at, now, horizon.delete_retention_ms)


def store_problems(
    location: keys.SnapshotLocation,
    manifest: ManifestV1,
    sizes: dict[str, int],
    store: ObjectStore,
) -> list[str]:
    """What a Kafka Streams snapshot's manifest and files must be beyond the native checks
    (the module docstring); one problem per rule broken (each SST at fault named)."""
    problems = []
    if manifest.format != "opaque":
        problems.append(
            f"format is {manifest.format!r}: a Kafka Streams snapshot is a RocksDB store "
            "folder, format 'opaque'"
        )
    own = f"{location.stream}-{location.partition}"
    offsets = manifest.offsets or {}
    others = [name for name in offsets if name != own and name.startswith(f"{location.stream}-")]
    if offsets.get(own) != location.lsn or others:
        problems.append(
            f"offsets are {manifest.offsets}, not exactly {{{own!r}: {location.lsn}}} and the "
            "input topic-partitions: the changelog topic-partition with the snapshot's LSN (the "
            "offset of the last record applied), and no other partition of the changelog"
        )
    names = [r.path.rpartition("/")[2] for r in manifest.references or ()]
    not_ssts = [n for n in names if not (n.endswith(".sst") and _STORE_FILE.fullmatch(n))]
    clashing = sorted(set(names) & {f.path for f in manifest.files}) + sorted(
        {n for n in names if names.count(n) > 1}
    )
    if not_ssts or clashing:
        problems.append(
            f"its references are not the store's other SSTs (e.g. "
            f"{(not_ssts or clashing)[0]!r}): a Kafka Streams snapshot references only "
            "RocksDB table files (*.sst) of its lineage, each name once and none of its own "
            "files' (the seed places them all in the store's one folder)"
        )
    outside = [f.path for f in manifest.files if not _STORE_FILE.fullmatch(f.path)]
    if outside:
        problems.append(
            f"{len(outside)} file(s) in a sub-folder, e.g. {outside[0]!r}: a snapshot holds "
            "the files of one store's RocksDB folder, which has none"
        )
    ssts = [location.prefix + f.path for f in manifest.files if f.path.endswith(".sst")]
    tails = {k: p for k, p in sst_footers(store, ssts).items() if p is not None}
    problems += [f"{key.removeprefix(location.prefix)}: {p}" for key, p in tails.items()]
    if manifest.changelog is not None:
        if location.lsn >= manifest.changelog.end_offset:
            problems.append(
                f"lsn {location.lsn} is not below changelog.end_offset "
                f"{manifest.changelog.end_offset}: the snapshot applied a record the "
                "changelog did not hold when it was read"
            )
        if manifest.created_at is None:
            problems.append(
                "changelog is given without created_at: give when the end offset was read, "
                "which delete.retention.ms is measured from"
            )
    return problems
