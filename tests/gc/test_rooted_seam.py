"""A rooted layout is a strategy like any other: one with its own bucket prefix, registered
in a catalog, is placed, registered, collected and reported with no change to a service.

The layout here is Fluss-shaped and exists only in this test: its own prefix
(``fluss/kv/{partition}/snap-{n}/``), a ``_METADATA`` manifest (the files and their
sizes, as JSON) and snapshot ids ``snap-{n}``. Its strategy answers the catalog's key
placement (``RootedStrategy.place``), registration's checks (``register_command``), GC's
steps (its report part included) and object deletion's manifest name; the services are the
ones the functions run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import timedelta

from snapledger.core.retention import Named
from snapledger.gc_settings import GcConfig
from snapledger.layout import SnapshotLocation
from snapledger.layouts.strategy import (
    Placed,
    Refused,
    RestorableUnlessBroken,
    SnapshotFolder,
)
from snapledger.models.commands import ManifestSummary, RegisterSnapshot
from snapledger.models.ledger import LineageId
from snapledger.services.gc import run_gc
from snapledger.services.gc_steps import StepsContext
from snapledger.services.registration import Outcome, register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from tests.gc.support import age_objects, gc_deps, statuses
from tests.ledger.conftest import clock, ledger, store

__all__ = ["clock", "ledger", "store"]

PREFIX = "fluss/kv"
STREAM = "kv-orders"
METADATA = "_METADATA"
_FOLDER = re.compile(r"snap-(?P<n>[0-9]{1,18})/")
CONFIG = GcConfig(default_min_count=1, default_min_age_hours=1)


@dataclass
class HealSeen:
    """The layout's report part: what its (fake) heal found."""

    partition: int
    broken: bool = False
    healed: bool = True

    def to_dict(self) -> dict[str, object]:
        return {"partition": self.partition, "state": "healed", "by": "fluss-like"}


@dataclass
class NoPointers:
    """The layout keeps no pointer GC reads."""

    check: None = None

    def named(self, *, members: bool = False) -> Named:
        return {}

    def named_prefix(self, prefix: str) -> str | None:
        return None

    def repair(self, deps, *, dry_run: bool) -> None:
        return None


@dataclass
class FlussSteps:
    context: StepsContext
    lists_every_folder: bool = True
    lists_shared: bool = False
    held_by_producer: frozenset[str] = frozenset()

    def heal(self) -> None:
        self.context.report.heal = HealSeen(self.context.head.partition)

    def as_recorded(self, records):
        return records

    def pointers(self) -> NoPointers:
        return NoPointers()

    def after_listing(self, listing, records, pointers) -> None:
        return None

    def after_deleting(self, finish, pointers):
        return finish


@dataclass(frozen=True)
class FlussLike(RestorableUnlessBroken):
    stream: str = STREAM
    prefix: str = PREFIX
    name: str = "fluss-like"
    owner: str = "producer"
    manifest_name: str = METADATA
    boot: str = "the producer's own restore"

    @property
    def stream_root(self) -> str:
        return f"{self.prefix}/"

    def root(self, partition: int) -> str:
        return f"{self.prefix}/{partition}/"

    def folder(self, partition: int, prefix: str) -> SnapshotFolder | None:
        match = _FOLDER.fullmatch(prefix.removeprefix(self.root(partition)))
        if match is None:
            return None
        n = int(match["n"])
        return SnapshotFolder(prefix, n, f"snap-{n}", prefix + METADATA)

    def place(self, key: str) -> Placed | Refused | None:
        if not key.startswith(self.stream_root):
            return None
        partition, _, rest = key.removeprefix(self.stream_root).partition("/")
        folder, _, name = rest.rpartition("/")
        found = self.folder(int(partition), f"{self.root(int(partition))}{folder}/")
        if found is None or name != METADATA:
            return Refused(f"not a {METADATA}", manifest=False)
        location = SnapshotLocation(self.stream, int(partition), found.lsn, found.snapshot_id)
        return Placed(self, location, key)

    def register_command(self, placed: Placed, store, holds):
        location = placed.location
        raw = store.get(placed.key)
        files = json.loads(raw)["files"]
        summary = ManifestSummary(
            epoch=0, file_count=len(files), total_bytes=sum(files.values()), format="fluss-kv"
        )
        command = RegisterSnapshot(
            stream=location.stream,
            partition=location.partition,
            lsn=location.lsn,
            snapshot_id=location.snapshot_id,
            manifest_key=placed.key,
            manifest_digest=f"sha:{len(raw)}",
            summary=summary,
        )
        return command, None

    def gc_steps(self, context: StepsContext) -> FlussSteps:
        return FlussSteps(context)


FLUSS = FlussLike()


class WithFluss(LayoutCatalog):
    """A test catalog with the Fluss-shaped layout registered beside the configured ones."""

    @property
    def rooted(self):
        return (*super().rooted, FLUSS)

    def for_stream(self, stream: str):
        return FLUSS if stream == STREAM else super().for_stream(stream)


LAYOUTS = WithFluss.of({"restate/cluster-a": "payments"})


def write_fluss(store, partition: int, n: int) -> str:
    """A snapshot's two data files, then its ``_METADATA`` naming them: its key."""
    folder = f"{PREFIX}/{partition}/snap-{n}/"
    files = {f"{folder}data-{i}.sst": f"rows of {n}/{i}".encode() for i in range(2)}
    for key, data in files.items():
        store.put(key, data)
    metadata = {"files": {k.rpartition("/")[2]: len(v) for k, v in files.items()}}
    store.put(folder + METADATA, json.dumps(metadata).encode())
    return folder + METADATA


def test_the_catalog_places_a_key_under_each_rooted_layouts_own_prefix():
    placed = LAYOUTS.place(f"{PREFIX}/2/snap-7/{METADATA}")
    assert isinstance(placed, Placed) and placed.strategy is FLUSS
    assert placed.location == SnapshotLocation(STREAM, 2, 7, "snap-7")
    data = LAYOUTS.place(f"{PREFIX}/2/snap-7/data-0.sst")
    assert isinstance(data, Refused) and not data.manifest
    # Restate's prefix is still Restate's, and the rest is native
    assert LAYOUTS.place("restate/cluster-a/0/latest.json").manifest is False  # type: ignore[union-attr]
    assert isinstance(LAYOUTS.place("elsewhere/x"), Refused)


def test_registration_checks_through_the_rooted_strategy(ledger, store, clock):
    keys = [write_fluss(store, 0, n) for n in (1, 2)]
    answers = register_manifests(keys, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS)
    assert [a.outcome for a in answers] == [Outcome.BECAME_LATEST, Outcome.BECAME_LATEST]
    assert {a.layout for a in answers} == {"fluss-like"}
    assert [a.snapshot_id for a in answers] == ["snap-1", "snap-2"]
    # The producer owns its pointer: snapledger published none
    assert not any(info.key.endswith("latest.json") for info in store.list(""))


class OrderSeen:
    """The store, with the order of every key sent to a delete."""

    def __init__(self, inner) -> None:
        self.inner, self.sent = inner, []

    def delete_many(self, keys):
        self.sent += list(keys)
        return self.inner.delete_many(keys)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_gc_deletes_with_the_strategys_manifest_last_and_reports_its_part(ledger, store, clock):
    keys = [write_fluss(store, 0, n) for n in (1, 2, 3)]
    register_manifests(keys, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS)
    clock.advance(timedelta(days=2))
    age_objects(store, PREFIX + "/", clock.now() - timedelta(days=2))
    seen = OrderSeen(store)
    deps = replace(gc_deps(ledger, seen, clock), layouts=LAYOUTS)
    report = run_gc(deps, config=CONFIG)
    assert not report.failed, report.to_dict()
    assert statuses(ledger, STREAM, 0) == {1: "DELETED", 2: "DELETED", 3: "REGISTERED"}
    for n in (1, 2):
        mine = [k for k in seen.sent if f"/snap-{n}/" in k]
        assert len(mine) == 3 and mine[-1].endswith("/" + METADATA), mine
    assert {info.key for info in store.list(PREFIX + "/")} == {
        f"{PREFIX}/0/snap-3/{name}" for name in ("data-0.sst", "data-1.sst", METADATA)
    }
    # The layout's part of the report: rendered under the lineage, counted in the counts
    (lineage,) = [r for r in report.lineages if r.lineage == LineageId(stream=STREAM, partition=0)]
    shown = report.to_dict()
    assert lineage.to_dict()["heal"] == {"partition": 0, "state": "healed", "by": "fluss-like"}
    assert shown["counts"]["latests_healed"] == 1, shown["counts"]
    assert shown["counts"]["latests_broken"] == 0
