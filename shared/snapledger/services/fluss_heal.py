"""Heal a Fluss bucket whose latest KV snapshot is broken (Fluss 0.7: apache/fluss#1481).

A tablet server restores a bucket from the highest snapshot ZooKeeper lists; if one of its
files is missing or of another size, the bucket's leader fails to start, on every retry,
and Fluss 0.7 never falls back. **Heal** (each GC run, before planning) checks ZooKeeper's
latest: one GET of its ``_METADATA``, one listing of its folder and of ``shared/``. When it
is broken, it records ``SnapshotFoundBroken`` on it **and on every registered snapshot of
the bucket that references a damaged shared file** (the ledger keeps each one's references:
no manifest is read), then drops the ZooKeeper node of every listed snapshot above the newest
one that passes the same check, is REGISTERED and not broken in the ledger, and was
registered less than ``log_ttl`` (less an hour) ago: Fluss replays its log from that
snapshot's ``log_offset``, which ``table.log.ttl`` keeps only so long. Fluss then restores
from it. When none qualifies, nothing is dropped and the report says why. Nothing is deleted
by healing; a dry run records and drops nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from snapledger.core.problems import join_problems
from snapledger.layouts import fluss_keys as fluss
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.limits import MAX_MANIFEST_BYTES
from snapledger.models.commands import RecordBrokenSnapshot, RecordRepoint
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus
from snapledger.ports import ObjectStore
from snapledger.ports.producers import FlussSnapshotNodes
from snapledger.services.commands import execute
from snapledger.services.fluss_snapshots import damaged_files, listed
from snapledger.services.gc_deps import GcDeps
from snapledger.services.queries import live_snapshots
from snapledger.services.restate_snapshots import capped

HEALTHY = "healthy"
NO_SNAPSHOT = "no_snapshot"
HEALED = "healed"
WOULD_HEAL = "would_heal"
UNHEALED = "unhealed"
#: How much younger than the log's TTL a snapshot to fall back to must be.
TTL_MARGIN = timedelta(hours=1)


@dataclass
class FlussHeal:
    """What heal found in a bucket's latest snapshot (ZooKeeper's) and what it did: the
    lineage report's ``heal`` part."""

    partition: int
    state: str
    names: str | None = None
    problems: list[str] = field(default_factory=list)
    healed_to: str | None = None
    #: Each damaged file, with every snapshot it breaks (ZooKeeper's latest among them).
    breaks: dict[str, list[str]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def broken(self) -> bool:
        return bool(self.problems)

    @property
    def healed(self) -> bool:
        return self.state == HEALED

    def to_dict(self) -> dict[str, object]:
        shown = {
            "partition": self.partition,
            "state": self.state,
            "names": self.names,
            "problems": self.problems,
            "healed_to": self.healed_to,
            "breaks": self.breaks,
            "dropped": self.dropped,
            "note": self.note,
        }
        return {k: v for k, v in shown.items() if v not in (None, "", [], {})}


def check(store: ObjectStore, table: fluss.FlussTable, bucket: int, number: int) -> dict[str, str]:
    """The snapshot's damaged files (key -> problem; its ``_METADATA``'s own key when that
    is missing or unreadable): empty when Fluss can restore from it, as far as sizes tell."""
    location = fluss.FlussLocation(bucket, number)
    key = location.metadata_key(table.prefix)
    try:
        raw = store.get(key, max_bytes=MAX_MANIFEST_BYTES)
        metadata = fluss.parse_metadata(raw, table, location)
    except Exception as exc:
        return {key: f"{key!r} cannot be read as Fluss's _METADATA ({exc})"}
    listing = listed(store, table, location, shared=bool(metadata.shared))
    return damaged_files(metadata, table, location, listing)


@dataclass
class BucketHeal:
    """One bucket's heal (see the module docstring): ``run`` it once."""

    deps: GcDeps[LayoutStrategy]
    table: fluss.FlussTable
    lineage: LineageId
    nodes: FlussSnapshotNodes
    #: ZooKeeper's list as read: loses the nodes heal drops.
    listed_ids: set[int]
    log_ttl: timedelta
    dry_run: bool = False
    records: dict[int, SnapshotRecord] = field(default_factory=dict)

    @property
    def bucket(self) -> int:
        return self.lineage.partition

    def run(self) -> FlussHeal:
        """Check ZooKeeper's latest of the bucket; fall back past it when broken."""
        if not self.listed_ids:
            return FlussHeal(self.bucket, NO_SNAPSHOT, note="ZooKeeper lists no snapshot yet")
        latest = max(self.listed_ids)
        outcome = FlussHeal(self.bucket, HEALTHY, names=f"snap-{latest}")
        damaged = check(self.deps.store, self.table, self.bucket, latest)
        if not damaged:
            return outcome
        outcome.problems = capped(list(damaged.values()))
        self.records = {r.lsn: r for r in live_snapshots(self.deps.ledger, self.lineage)}
        outcome.breaks = self.broken_by(damaged, latest)
        target = self.fallback(latest, outcome)
        if not self.dry_run:
            self.record_broken(outcome, damaged)
        if target is None:
            outcome.state = UNHEALED
            return outcome
        outcome.healed_to = target.snapshot_id
        above = sorted(n for n in self.listed_ids if n > target.lsn)
        outcome.dropped = [f"snap-{n}" for n in above]
        if self.dry_run:
            outcome.state = WOULD_HEAL
            return outcome
        self.repoint(target, above, latest, outcome)
        outcome.state = HEALED
        return outcome

    def repoint(
        self, target: SnapshotRecord, above: list[int], latest: int, outcome: FlussHeal
    ) -> None:
        """Drop the nodes above ``target`` (Fluss's latest is then it), then record it."""
        for number in above:
            self.nodes.drop(self.table.table_id, self.bucket, number)
            self.listed_ids.discard(number)
        reason = f"snap-{latest} is broken: {join_problems(outcome.problems)}"
        execute(
            self.deps.ledger,
            RecordRepoint(
                stream=self.lineage.stream,
                partition=self.bucket,
                lsn=target.lsn,
                snapshot_id=target.snapshot_id,
                previous_snapshot_id=f"snap-{latest}",
                previous_lsn=latest,
                cause="heal",
                by="snapledger gc",
                reason=reason[:1024],
                request_id=f"fluss-heal:{self.table.table_id}:{self.bucket}:{latest}:{target.lsn}",
            ),
            self.deps.clock.now(),
            snapshot_keys=(target.sort_key,),
        )

    def broken_by(self, damaged: dict[str, str], latest: int) -> dict[str, list[str]]:
        """Each damaged file -> ZooKeeper's latest and every REGISTERED snapshot of the
        bucket whose references name it (a shared SST several use breaks them all)."""
        root = fluss.FlussLocation(self.bucket, latest).root(self.table.prefix)
        breaks = {}
        for key in damaged:
            path = key.removeprefix(root)
            users = {
                r.snapshot_id
                for r in self.records.values()
                if r.status is SnapshotStatus.REGISTERED and path in (r.references or ())
            }
            breaks[key] = sorted(users | {f"snap-{latest}"}, key=lambda s: int(s[5:]))
        return breaks

    def fallback(self, latest: int, outcome: FlussHeal) -> SnapshotRecord | None:
        """The newest listed snapshot below ``latest`` Fluss can restore and replay from."""
        broken = {s for users in outcome.breaks.values() for s in users}
        now, refused = self.deps.clock.now(), []
        for number in sorted((n for n in self.listed_ids if n < latest), reverse=True):
            record, name = self.records.get(number), f"snap-{number}"
            if record is None or record.status is not SnapshotStatus.REGISTERED or record.broken:
                refused.append(f"{name} is not registered and whole in the ledger")
            elif name in broken:
                refused.append(f"{name} uses a damaged file")
            elif now - record.registered_at > self.log_ttl - TTL_MARGIN:
                refused.append(
                    f"{name} was registered {now - record.registered_at} ago: Fluss's log "
                    f"(table.log.ttl, {self.log_ttl}) may no longer hold its log_offset"
                )
            elif problems := check(self.deps.store, self.table, self.bucket, number):
                refused.append(f"{name} is broken too: {join_problems(list(problems.values()))}")
            else:
                return record
        why = "; ".join(refused) if refused else "it lists no older one"
        outcome.note = (
            f"no snapshot ZooKeeper lists can be fallen back to ({why}): the bucket cannot "
            "restore until one can (restore the files, or raise kv.snapshot.num-retained so "
            "more are kept)"
        )
        return None

    def record_broken(self, outcome: FlussHeal, damaged: dict[str, str]) -> None:
        """``SnapshotFoundBroken`` on every registered snapshot a damaged file breaks, each
        naming the damaged files it uses."""
        for number, record in sorted(self.records.items()):
            if record.status is not SnapshotStatus.REGISTERED or record.broken:
                continue
            mine = [
                damaged[k] for k, users in outcome.breaks.items() if record.snapshot_id in users
            ]
            if mine:
                execute(
                    self.deps.ledger,
                    RecordBrokenSnapshot(
                        stream=self.lineage.stream,
                        partition=self.bucket,
                        lsn=number,
                        snapshot_id=record.snapshot_id,
                        problems=tuple(capped(mine)),
                    ),
                    self.deps.clock.now(),
                    snapshot_keys=(record.sort_key,),
                )
