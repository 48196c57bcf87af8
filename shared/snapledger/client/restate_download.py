"""Download a Restate snapshot (format ``restate``: RocksDB SSTs, opaque to the Spark jobs).

``download_restate_snapshot(store, metadata_key, dest)`` copies the snapshot's
``metadata.json`` and every file it names into ``dest``, each checked against its stated
size and (for an SST) RocksDB's footer magic before it is renamed into place, with the
same checks registration runs (``snapledger.layouts.restate``). The folder it fills is what
a Restate node downloads to restore a partition: a tool can open it with RocksDB, or an
operator can keep it outside the bucket.
"""

from __future__ import annotations

import os
from pathlib import Path

from snapledger.client.errors import SnapshotCorruptError
from snapledger.client.storage import BlobStore
from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.errors import InvalidKeyError
from snapledger.layouts import restate


def download_restate_snapshot(
    store: BlobStore, metadata_key: str, dest_dir: str | os.PathLike[str]
) -> Path:
    """Copy the Restate snapshot whose ``metadata.json`` is at ``metadata_key`` (relative
    to the store's root) under ``dest_dir``; returns it. InvalidKeyError for a key that is
    no Restate ``metadata.json``; SnapshotCorruptError naming the file at fault otherwise."""
    location = _location(metadata_key)
    raw = store.get(metadata_key)
    try:
        metadata = restate.parse_metadata(location, raw)
    except ManifestRejectedError as exc:
        raise SnapshotCorruptError(metadata_key, detail=exc.reason) from exc
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    for key, size in restate.expected_files(location, metadata).items():
        final = dest / key.rpartition("/")[2]
        partial = final.with_name(final.name + ".partial")
        stored = store.download(key, partial)
        problem = None
        if stored.size != size:
            problem = f"it is {stored.size:,} bytes but metadata.json says {size:,}"
        elif key.endswith(restate.SST_SUFFIX):
            with partial.open("rb") as handle:
                handle.seek(max(0, stored.size - restate.SST_TAIL_BYTES))
                problem = restate.sst_footer_problem(handle.read())
        if problem is not None:
            partial.unlink(missing_ok=True)
            raise SnapshotCorruptError(key, detail=problem)
        partial.replace(final)
    (dest / restate.METADATA_NAME).write_bytes(raw)
    return dest


def _location(metadata_key: str) -> restate.RestateLocation:
    """The snapshot a ``metadata.json`` key names, whatever prefix it is under."""
    prefix = metadata_key.rpartition("/lsn_")[0]
    prefix = prefix.rpartition("/")[0]  # drop the partition
    located = restate.parse_restate_key(metadata_key, prefix) if prefix else None
    if located is None:
        raise InvalidKeyError(
            f"{metadata_key!r} is not a Restate snapshot's metadata.json "
            "({prefix}/{partition}/lsn_{lsn:020d}-{snapshot_id}/metadata.json)"
        )
    return located
