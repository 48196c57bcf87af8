"""A stream processor's side of snapledger: write a snapshot of its keyed state.

The "processor" here is simulated: it applies a changelog of ``--lsn + 1`` records
(offsets 0..lsn), each a put of one of ``--keys`` keys, and snapshots the resulting state
at changelog offset ``lsn``. It consumed one input record per changelog record, so its
input position (the next offset to read) is ``lsn + 1``.

    python examples/producer.py --root file:///tmp/snapledger --stream orders --partition 3
    python examples/producer.py --root s3://my-bucket --stream orders --partition 3 --opaque

``--opaque`` writes a fake RocksDB checkpoint (CURRENT, MANIFEST-000001, 000042.sst) as
an ``opaque`` snapshot instead. The writer puts the data files first and
``_manifest.json`` last; the manifest's arrival is what registers the snapshot.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from snapledger.client import SnapshotWriter, WrittenSnapshot

PRODUCER = "snapledger-example-producer"


def build_state(keys: int, lsn: int) -> dict[str, bytes]:
    """The state after applying changelog offsets 0..lsn: offset ``o`` puts key
    ``k{o % keys}`` to ``v{o}``, so each key holds the value of its last put."""
    state: dict[str, bytes] = {}
    for offset in range(lsn + 1):
        state[f"k{offset % keys:05d}"] = f"v{offset}".encode()
    return state


def input_offsets(stream: str, partition: int, lsn: int) -> dict[str, int]:
    """The input positions the state matches: the next offset to read of each source
    topic-partition (here one input record per changelog record)."""
    return {f"{stream}-{partition}": lsn + 1}


def write_state(
    root: str,
    stream: str,
    partition: int,
    *,
    lsn: int,
    epoch: int,
    keys: int = 1_000,
    s3_client: Any = None,
) -> WrittenSnapshot:
    """Write the simulated state at changelog offset ``lsn`` as a ``kv-parquet`` snapshot."""
    writer = SnapshotWriter(root, stream, partition, producer=PRODUCER, s3_client=s3_client)
    return writer.write(
        lsn=lsn,  # the changelog offset of the last record applied
        epoch=epoch,  # the leader epoch / generation of this writer
        data=build_state(keys, lsn),  # a mapping key -> value (bytes, or None)
        offsets=input_offsets(stream, partition, lsn),
    )


def make_fake_checkpoint(folder: Path) -> Path:
    """A folder shaped like a RocksDB checkpoint (not a real one)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "CURRENT").write_bytes(b"MANIFEST-000001\n")
    (folder / "MANIFEST-000001").write_bytes(b"fake rocksdb manifest\n" * 8)
    (folder / "000042.sst").write_bytes(bytes(range(256)) * 64)
    return folder


def write_checkpoint(
    root: str,
    stream: str,
    partition: int,
    checkpoint: Path,
    *,
    lsn: int,
    epoch: int,
    s3_client: Any = None,
) -> WrittenSnapshot:
    """Write every file under ``checkpoint`` as an ``opaque`` snapshot."""
    writer = SnapshotWriter(root, stream, partition, producer=PRODUCER, s3_client=s3_client)
    return writer.write_files(
        lsn=lsn,
        epoch=epoch,
        paths_or_dir=checkpoint,
        offsets=input_offsets(stream, partition, lsn),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="file:///dir or s3://bucket[/prefix]")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--partition", type=int, required=True)
    parser.add_argument("--lsn", type=int, default=4_999, help="changelog offset (default 4999)")
    parser.add_argument("--epoch", type=int, default=1, help="leader epoch (default 1)")
    parser.add_argument("--keys", type=int, default=1_000, help="distinct keys (default 1000)")
    parser.add_argument("--opaque", action="store_true", help="write a fake RocksDB checkpoint")
    args = parser.parse_args(argv)

    if args.opaque:
        with tempfile.TemporaryDirectory(prefix="checkpoint-") as scratch:
            checkpoint = make_fake_checkpoint(Path(scratch) / "checkpoint")
            written = write_checkpoint(
                args.root, args.stream, args.partition, checkpoint, lsn=args.lsn, epoch=args.epoch
            )
    else:
        written = write_state(
            args.root,
            args.stream,
            args.partition,
            lsn=args.lsn,
            epoch=args.epoch,
            keys=args.keys,
        )
    print(f"snapshot_id={written.snapshot_id}")
    print(f"prefix={written.prefix}")
    print(f"manifest_key={written.manifest_key}")
    print(f"format={written.format} lsn={written.lsn} epoch={written.epoch}")
    print(f"rows={written.row_count} files={len(written.files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
