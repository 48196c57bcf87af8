"""A ledger bounded by live state: terminal items carry a TTL, live ones never do, and GC
plans a lineage from its live records only (docs/ledger.md "TTL", docs/retention.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.adapters.table_definition import TTL_ATTRIBUTE
from snapledger.clock import ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.models.jobs import JobRecord
from snapledger.models.ledger import Hold, LineageId, SnapshotRecord, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.models.requests import LaunchRequest
from snapledger.services.expiry import plan_lineage
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from snapledger.services.job_state import record_job_state
from snapledger.services.launch import LaunchDeps, launch
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import age_objects, gc_deps, prefix_of, records, stream_log
from tests.support import FakeRunner, moto_ledger, write_history, write_segments, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
WINDOW = codec.DEFAULT_TTL_WINDOW
DAY = timedelta(days=1)
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def epoch(when: datetime) -> int:
    return int(when.timestamp())


def scan(ledger) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": ledger.table_name, "ConsistentRead": True}
    while True:
        response = ledger.client.scan(**request)
        items += response["Items"]
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def expected_ttl(item: dict[str, Any], jobs: dict[str, JobRecord]) -> int | None:
    """What the TTL of ``item`` must be, from what it holds (an oracle apart from the codec's
    functions: the rules of docs/ledger.md spelled out on the stored fields)."""
    pk, sk = item["pk"]["S"], item["sk"]["S"]
    if sk.startswith("EV#"):
        return epoch(datetime.fromisoformat(item["at"]["S"]) + WINDOW)
    if sk.startswith("SNAP#"):
        return _snapshot_ttl(codec.snapshot_from_item(item))
    if pk.startswith("JOB#"):
        job = JobRecord.model_validate(codec.plain(item))
        return epoch(job.updated_at + WINDOW) if job.terminal else None
    if pk.startswith("RUN#"):
        job = jobs[item["job_id"]["S"]]
        return epoch(job.updated_at + WINDOW) if job.terminal else None
    if sk.startswith("GEN#") and item["status"]["S"] == "FAILED":
        return epoch(datetime.fromisoformat(item["failed_at"]["S"]) + WINDOW)
    return None  # HEAD, POLICY, SEG, the GC checkpoint, REJECTED/KEY#, GEN: never expire


def _snapshot_ttl(record: SnapshotRecord) -> int | None:
    if record.status is SnapshotStatus.DELETED:
        assert record.deleted_at is not None
        return epoch(record.deleted_at + WINDOW)
    if record.status is not SnapshotStatus.REJECTED:
        return None  # REGISTERED, EXPIRING: live
    if any(h.expires_at is None for h in record.holds):
        return None
    ends = [record.registered_at, *(h.expires_at for h in record.holds)]
    return epoch(max(e for e in ends if e is not None) + WINDOW)


def check_every_item(ledger) -> list[str]:
    """Every item's TTL is the one the rules give; returns the kinds of item seen."""
    items = scan(ledger)
    jobs = {
        job.job_id: job
        for job in (
            JobRecord.model_validate(codec.plain(i))
            for i in items
            if i["pk"]["S"].startswith("JOB#")
        )
    }
    seen = []
    for item in items:
        want = expected_ttl(item, jobs)
        assert codec.ttl_of(item) == want, (item["pk"], item["sk"], item.get("status"))
        seen.append(f"{item['sk']['S'][:4]}:{'ttl' if want else 'live'}")
    return seen


# --- the command sequences -------------------------------------------------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("register"), st.integers(0, 2)),  # epoch: below the max is fenced
        st.tuples(st.just("invalid"), st.just(0)),
        st.tuples(st.just("hold_rejected"), st.integers(0, 3)),  # days; 0: endless
        st.tuples(st.just("gc"), st.integers(0, 3)),  # days to let pass first
        st.tuples(st.just("job"), st.sampled_from(["RUNNING", "SUCCESS", "FAILED", "CANCELLED"])),
        st.tuples(st.just("policy"), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=8,
)


class Ledgered:
    """One sequence's world: a fresh moto table, a file store, a manual clock."""

    def __init__(self, ledger, store, clock: ManualClock) -> None:
        self.ledger, self.store, self.clock = ledger, store, clock
        self.lsn = 0
        self.jobs = DynamoJobStore(ledger.table_name, client=ledger.client)
        self.runner = FakeRunner()
        self.requests = 0
        self.covered = -1  # the changelog's last LSN in a segment written so far

    def step(self, action: str, arg: Any) -> None:
        getattr(self, action)(arg)
        self.clock.advance(timedelta(hours=1))

    def register(self, epoch: int) -> None:
        self.lsn += 100
        key = write_snapshot(self.store, lsn=self.lsn, epoch=epoch)
        register_manifest(
            key, ledger=self.ledger, store=self.store, clock=self.clock, layouts=NATIVE_ONLY
        )

    def invalid(self, _: int) -> None:
        self.lsn += 100
        key = write_snapshot(self.store, lsn=self.lsn, manifest=b"not json")
        register_manifest(
            key, ledger=self.ledger, store=self.store, clock=self.clock, layouts=NATIVE_ONLY
        )

    def hold_rejected(self, days: int) -> None:
        rejected = [
            r
            for r in records(self.ledger).values()
            if r.status is SnapshotStatus.REJECTED and not r.holds
        ]
        if rejected:  # the newest unheld one
            until = self.clock.now() + days * DAY if days else None
            hold_snapshot(
                self.ledger, ORDERS_3, rejected[0].snapshot_id, clock=self.clock, expires_at=until
            )

    def gc(self, days: int) -> None:
        self.clock.advance(days * DAY)
        config = GcConfig(orphan_grace_hours=1)
        run_gc(gc_deps(self.ledger, self.store, self.clock), config=config)

    def job(self, final: str) -> None:
        if not any(r.status is SnapshotStatus.REGISTERED for r in records(self.ledger).values()):
            return
        if self.lsn + 50 > self.covered:  # the tail, in a segment of its own: no overlap
            write_segments(self.store, "orders", 3, (self.covered + 1, self.lsn + 50))
            self.covered = self.lsn + 50
        self.requests += 1
        request = LaunchRequest.model_validate(
            {"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}
        )
        deps = LaunchDeps(
            ledger=self.ledger,
            jobs=self.jobs,
            runner=self.runner,
            store=self.store,
            clock=self.clock,
        )
        job = launch(request, request_id=f"req-{self.requests}", deps=deps).job
        for state in ("RUNNING", final):
            record_job_state(
                run_id=job.run_id or "",
                job_name=job.job_id,
                state=state,
                reason=None,
                jobs=self.jobs,
                ledger=self.ledger,
                clock=self.clock,
            )

    def policy(self, min_count: int) -> None:
        streams = stream_log(self.ledger)
        default = RetentionPolicy()
        set_policy(streams, "orders", {"min_count": min_count}, default=default, clock=self.clock)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
# Found by a CI-like run: two restores with a rejected snapshot between them (the second
# one's changelog once overlapped the first's, and the launch was refused).
@example(steps=[("register", 0), ("job", "RUNNING"), ("invalid", 0), ("job", "RUNNING")])
def test_every_terminal_item_has_its_ttl_and_no_live_item_has_one(tmp_path_factory, steps):
    from snapledger.adapters.object_store_file import FileObjectStore

    store = FileObjectStore(tmp_path_factory.mktemp("root"))
    with moto_ledger() as ledger:
        world = Ledgered(ledger, store, ManualClock(T0))
        for action, arg in steps:
            world.step(action, arg)
            check_every_item(ledger)


def test_the_sequences_reach_every_kind_of_item(tmp_path):
    """The property above can fail: one fixed sequence visits every kind of terminal and
    live item (a codec that set no TTL, or set one on a live item, fails it)."""
    from snapledger.adapters.object_store_file import FileObjectStore

    with moto_ledger() as ledger:
        world = Ledgered(ledger, FileObjectStore(tmp_path), ManualClock(T0))
        for action, arg in [
            ("register", 2),
            ("register", 1),  # fenced: REJECTED
            ("hold_rejected", 2),  # held for 2 days: its TTL counts from the hold's end
            ("invalid", 0),  # REJECTED
            ("hold_rejected", 0),  # held until released: no TTL
            ("job", "SUCCESS"),
            ("job", "RUNNING"),
            ("policy", 1),
            ("register", 2),
            ("register", 2),
            ("gc", 3),  # the older ones DELETED; the unheld REJECTED cleaned up (DELETED)
        ]:
            world.step(action, arg)
        seen = set(check_every_item(ledger))
        statuses = {r.status for r in records(ledger).values()}
    assert {"SNAP:ttl", "SNAP:live", "EV#0:ttl", "HEAD:live", "JOB:ttl", "JOB:live"} <= seen
    assert {SnapshotStatus.DELETED, SnapshotStatus.REGISTERED} <= statuses


# --- the pure rules ---------------------------------------------------------------------------


def _record(status: SnapshotStatus, **kw: Any) -> SnapshotRecord:
    return SnapshotRecord.model_validate(
        {
            "stream": "orders",
            "partition": 3,
            "lsn": 5,
            "snapshot_id": "01J0000000000000000000000A",
            "status": status,
            "manifest_key": "snapshots/orders/3/x/_manifest.json",
            "manifest_digest": "0" * 64,
            "registered_at": T0,
            "version": 1,
            **kw,
        }
    )


def test_a_rejected_record_outlives_its_holds_and_a_deleted_one_counts_from_its_deletion():
    deleted = _record(SnapshotStatus.DELETED, deleted_at=T0 + 5 * DAY)
    assert codec.snapshot_expires(deleted, WINDOW) == T0 + 5 * DAY + WINDOW
    rejected = _record(SnapshotStatus.REJECTED)
    assert codec.snapshot_expires(rejected, WINDOW) == T0 + WINDOW
    held = rejected.model_copy(
        update={"holds": (Hold(hold_id="h", at=T0, expires_at=T0 + 90 * DAY),)}
    )
    assert codec.snapshot_expires(held, WINDOW) == T0 + 90 * DAY + WINDOW
    endless = rejected.model_copy(update={"holds": (Hold(hold_id="h", at=T0),)})
    assert codec.snapshot_expires(endless, WINDOW) is None
    for live in (SnapshotStatus.REGISTERED, SnapshotStatus.EXPIRING):
        assert codec.snapshot_expires(_record(live), WINDOW) is None
    assert codec.snapshot_expires(deleted, None) is None  # a window of 0 days: kept for ever


def test_the_ttl_attribute_cannot_collide_with_a_holds_expires_at():
    assert TTL_ATTRIBUTE == "ttl"
    held = _record(
        SnapshotStatus.REGISTERED, holds=(Hold(hold_id="h", at=T0, expires_at=T0 + DAY),)
    )
    item = codec.snapshot_item(held, WINDOW)
    assert TTL_ATTRIBUTE not in item and "expires_at" not in item
    assert (
        codec.snapshot_from_item(
            codec.snapshot_item(_record(SnapshotStatus.DELETED, deleted_at=T0), WINDOW)
        ).status
        is SnapshotStatus.DELETED
    )


# --- GC reads live records only -----------------------------------------------------------------


@pytest.mark.parametrize("deleted", [0, 5_000])
def test_gc_plans_a_long_history_in_one_read(ledger, store, clock, deleted):
    """3 live records behind 5,000 DELETED ones: planned from one Query of the live index
    (issue 14's target: at most 2), the same as with no history at all."""
    from snapledger.models.ledger import Head

    statuses = [SnapshotStatus.DELETED] * deleted + [SnapshotStatus.REGISTERED] * 3
    written = write_history(ledger, "orders", 3, statuses, clock.now() - 10 * DAY)
    head = ledger.get_head(ORDERS_3, consistent=True)
    assert isinstance(head, Head)
    calls: list[str] = []

    def count(model, **_):
        calls.append(model.name)

    deps = gc_deps(ledger, store, clock)
    ledger.client.meta.events.register("before-call.dynamodb", count)
    try:
        plan, planned = plan_lineage(deps, head, RetentionPolicy(min_count=1), GcConfig())
    finally:
        ledger.client.meta.events.unregister("before-call.dynamodb", count)
    assert calls == ["Query"]
    assert [r.lsn for r in planned] == [r.lsn for r in reversed(written[-3:])]
    assert [d.record.lsn for d in plan.doomed] == [deleted + 2, deleted + 1]


def test_gc_cleans_up_rejected_and_expiring_records_it_reads_from_the_index(ledger, store, clock):
    """REJECTED (past the grace window) and EXPIRING records are in GC's one read: their
    files are deleted and the records become DELETED, with their TTL."""
    deps = gc_deps(ledger, store, clock)
    register = lambda lsn, **kw: register_manifest(  # noqa: E731
        write_snapshot(store, lsn=lsn, **kw),
        ledger=ledger,
        store=store,
        clock=clock,
        layouts=NATIVE_ONLY,
    )
    register(100, epoch=2)
    rejected = register(50, epoch=1)  # fenced
    assert rejected.outcome == "fenced"
    clock.advance(2 * DAY)
    run_gc(deps, config=GcConfig())
    record = records(ledger)[50]
    assert record.status is SnapshotStatus.DELETED
    assert list(store.list(prefix_of(record))) == []
    check_every_item(ledger)


def test_objects_written_again_after_a_deletion_are_claimed_and_deleted(ledger, store, clock):
    """GC no longer reads DELETED records: a prefix whose record is DELETED (or gone with
    its TTL) and holds objects again is swept like an orphan, after the grace window."""
    deps = gc_deps(ledger, store, clock)
    config = GcConfig(default_min_count=1)
    for lsn in (10, 20):
        register_manifest(
            write_snapshot(store, lsn=lsn),
            ledger=ledger,
            store=store,
            clock=clock,
            layouts=NATIVE_ONLY,
        )
    clock.advance(2 * DAY)
    run_gc(deps, config=config)
    gone = records(ledger)[10]
    assert gone.status is SnapshotStatus.DELETED
    # the same prefix written again, and left past the grace window
    store.put(prefix_of(gone) + "part-00000.parquet", b"again")
    age_objects(store, prefix_of(gone), clock.now() - 2 * DAY)

    report = run_gc(deps, config=config)

    assert list(store.list(prefix_of(gone))) == []
    assert [o.action for o in report.lineages[0].orphans] == ["deleted"]
    again = records(ledger)[10]
    assert again.status is SnapshotStatus.DELETED and again.version > gone.version
    check_every_item(ledger)
