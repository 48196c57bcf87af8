"""A stream processor's restart: find the latest snapshot, check it, load it, seek inputs.

    # the latest registered snapshot of orders/3, found through a deployment
    python examples/consumer.py --root s3://my-bucket --stream orders --partition 3
    # ... or through the local runtime (.local/state), or a prefix given directly
    python examples/consumer.py --root file:///tmp/root --stream orders --partition 3 --local
    python examples/consumer.py --root file:///tmp/root --prefix snapshots/orders/3/...-.../
    # the state a restore job wrote for a partition
    python examples/consumer.py --root s3://my-bucket --restore-job restore-... --partition 3

The registry's ``latest`` answer holds the partition's HEAD (``latest_snapshot_id``,
``latest_lsn``); ``snapshot`` gives that snapshot's record, whose ``manifest_key`` the
reader opens. ``verify`` checks every file's size and checksum; ``to_arrow`` checks them
again as it reads, and refuses an ``opaque`` snapshot (download it instead).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

import snapledger.local
from snapledger.client import Snapledger, SnapshotReader


@dataclass(frozen=True)
class LoadedState:
    """What a processor needs to resume: its state and where to seek its inputs."""

    where: str  # the prefix read
    lsn: int  # the state holds every changelog record with lsn <= this
    state: dict[str, bytes | None]
    offsets: dict[str, int] | None  # the input positions the state matches, if known


def latest_manifest_key(registry: Snapledger, stream: str, partition: int) -> str:
    """The ``_manifest.json`` key of the partition's latest snapshot, from the registry."""
    head = registry.latest(stream, partition)["head"]
    snapshot_id = head["latest_snapshot_id"]
    if snapshot_id is None:
        raise LookupError(f"{stream}/{partition} has no latest snapshot yet")
    record = registry.snapshot(stream, partition, snapshot_id)["snapshot"]
    return str(record["manifest_key"])  # the record holds the key, not a prefix


def load_snapshot(root: str, prefix_or_key: str, *, s3_client: Any = None) -> LoadedState:
    """Open the snapshot, verify every file, and load it as a dict."""
    opened = SnapshotReader(root, s3_client=s3_client).open(prefix_or_key)
    opened.verify()  # sizes and checksums; SnapshotCorruptError names any file at fault
    table = opened.to_arrow()  # key string, value binary, lsn int64, sorted by key
    state = dict(zip(table["key"].to_pylist(), table["value"].to_pylist(), strict=True))
    return LoadedState(opened.prefix, opened.lsn, state, opened.offsets)


def load_restore(root: str, job_id: str, partition: int, *, s3_client: Any = None) -> LoadedState:
    """The state a restore job wrote for ``partition`` (from its ``_restore.json``).

    Its ``offsets`` are the base snapshot's only when no changelog was applied after the
    base; otherwise None: the input positions at that LSN are the processor's to know.
    """
    opened = SnapshotReader(root, s3_client=s3_client).open_restore(job_id, partition)
    opened.verify()
    table = opened.to_arrow()
    state = dict(zip(table["key"].to_pylist(), table["value"].to_pylist(), strict=True))
    return LoadedState(opened.prefix, opened.lsn, state, opened.offsets)


def main(argv: list[str] | None = None, *, registry: Snapledger | None = None) -> int:
    """``registry``: the registry to ask for the latest snapshot (tests pass one);
    otherwise ``--local`` or ``--stack`` chooses it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="file:///dir or s3://bucket[/prefix]")
    parser.add_argument("--stream")
    parser.add_argument("--partition", type=int)
    parser.add_argument("--prefix", help="a snapshot prefix or manifest key: skip the registry")
    parser.add_argument("--restore-job", help="read this restore job's output for --partition")
    parser.add_argument("--local", action="store_true", help="ask the local runtime")
    parser.add_argument("--stack", default="Snapledger", help="the deployment's stack name")
    args = parser.parse_args(argv)

    if args.restore_job is not None:
        if args.partition is None:
            parser.error("--restore-job needs --partition")
        loaded = load_restore(args.root, args.restore_job, args.partition)
    elif args.prefix is not None:
        loaded = load_snapshot(args.root, args.prefix)
    else:
        if args.stream is None or args.partition is None:
            parser.error("give --prefix, --restore-job, or --stream and --partition")
        if registry is not None:
            key = latest_manifest_key(registry, args.stream, args.partition)
        else:
            opened = snapledger.local.connect() if args.local else Snapledger.for_stack(args.stack)
            with opened as own:
                key = latest_manifest_key(own, args.stream, args.partition)
        loaded = load_snapshot(args.root, key)

    print(f"prefix={loaded.where}")
    print(f"lsn={loaded.lsn}")
    print(f"rows={len(loaded.state)}")
    if loaded.offsets is None:
        print("offsets=unknown (resume the inputs from the processor's own positions)")
    for source, position in sorted((loaded.offsets or {}).items()):
        print(f"seek {source} to {position}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
