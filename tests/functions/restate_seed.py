"""A runtime with a Restate stream (tests/restate/fixtures.py's layout), for the console, the
client and the CLI: each partition's snapshots at LSN 1000, 2000, 3000, registered, and
latest.json naming 3000 and retaining all three."""

from __future__ import annotations

import json

from snapledger.runtime import Runtime, use_runtime
from snapledger.services.registration import register_manifest
from tests.restate.fixtures import PREFIX, STREAM, Written, write_latest, write_restate_snapshot
from tests.support import deployed_with

__all__ = ["PREFIX", "STREAM", "damage", "latest_names", "seed_restate"]

LSNS = (1000, 2000, 3000)


def seed_restate(rt: Runtime, partitions: tuple[int, ...] = (0, 1)) -> dict[int, list[Written]]:
    """``rt``'s adapters in a runtime deployed with the Restate prefix (built by the
    composition root), used by the handlers from now on (the caller's ``runtime_override``
    resets it); each partition's snapshots, oldest first."""
    restate_rt = deployed_with(rt, layouts={PREFIX: {"layout": "restate", "stream": STREAM}})
    use_runtime(restate_rt)
    seeded: dict[int, list[Written]] = {}
    for partition in partitions:
        written = [
            write_restate_snapshot(rt.store, lsn, partition=partition, n=lsn + partition)
            for lsn in LSNS
        ]
        for w in written:
            register_manifest(
                w.location.metadata_key,
                ledger=rt.ledger,
                store=rt.store,
                clock=rt.clock,
                layouts=restate_rt.layouts,
            )
        write_latest(rt.store, written[-1], list(reversed(written)))
        seeded[partition] = written
    return seeded


def damage(rt: Runtime, written: Written, index: int = 0) -> str:
    """Truncate one of the snapshot's SSTs (its size differs): the key."""
    key = written.sst_keys[index]
    rt.store.put(key, rt.store.get(key)[:-10])
    return key


def latest_names(rt: Runtime, partition: int) -> str:
    """The snapshot id the partition's latest.json names."""
    document = json.loads(rt.store.get(f"{PREFIX}/{partition}/latest.json"))
    return str(document["snapshot_id"])
