"""A Fluss KV snapshot, read and checked without reading its data (``layouts/fluss_keys.py``).

On its ``_METADATA``'s arrival: one GET of ``_METADATA`` (at most ``MAX_MANIFEST_BYTES``),
one listing of the snapshot's folder and, when it names shared SSTs, one listing of the
bucket's ``shared/`` (1,000 keys a request). It is registered when its ids match its key,
every file it names is inside its bucket's folder and present with its size; its own
folder's files are its own, its ``shared/`` files its references (GC deletes none while a
snapshot that uses them is kept), its ``log_offset`` its ``offsets``. Fluss's coordinator
may write ``_METADATA`` again (its retries overwrite): the same content is the same
registration.
"""

from __future__ import annotations

from snapledger.core.manifest_rules import manifest_digest
from snapledger.core.problems import join_problems
from snapledger.layouts import fluss_keys as fluss
from snapledger.models.commands import ArrivedManifest, ManifestSummary, RegisterSnapshot
from snapledger.ports import ObjectInfo, ObjectStore
from snapledger.services.arrived_manifest import read_arrived
from snapledger.services.restate_snapshots import files_digest

#: Fluss fences its own writers (a bucket's leader epoch): every snapshot is at epoch 0.
FLUSS_EPOCH = 0
#: The key of ``log_offset`` in a registered snapshot's ``offsets``.
LOG_OFFSET = "log_offset"


def origin_of(table: fluss.FlussTable) -> str:
    """Who wrote the lineage's snapshots, as the ledger compares it."""
    return f"Fluss table {table.database}.{table.table} (table id {table.table_id})"


def listed(
    store: ObjectStore, table: fluss.FlussTable, location: fluss.FlussLocation, *, shared: bool
) -> dict[str, ObjectInfo]:
    """The snapshot's folder and, with ``shared``, the bucket's ``shared/``, as listed."""
    folders = [location.folder(table.prefix)]
    if shared:
        folders.append(location.root(table.prefix) + fluss.SHARED_FOLDER + "/")
    return {info.key: info for folder in folders for info in store.list(folder)}


def damaged_files(
    metadata: fluss.FlussMetadata,
    table: fluss.FlussTable,
    location: fluss.FlussLocation,
    listing: dict[str, ObjectInfo],
) -> dict[str, str]:
    """Each file ``_METADATA`` names that is missing or of another size: key -> the problem."""
    root = location.root(table.prefix)
    wanted = [
        *metadata.own.items(),
        *((root + path, size) for path, size in metadata.shared.items()),
    ]
    damaged = {}
    for key, size in wanted:
        info = listing.get(key)
        if info is None:
            damaged[key] = f"{key!r} is not in the store (Fluss's _METADATA names it)"
        elif info.size != size:
            damaged[key] = (
                f"{key!r} is {info.size:,} bytes in the store but _METADATA says {size:,}"
            )
    return damaged


def file_problems(
    metadata: fluss.FlussMetadata,
    table: fluss.FlussTable,
    location: fluss.FlussLocation,
    listing: dict[str, ObjectInfo],
) -> list[str]:
    """One line per file ``_METADATA`` names that is missing or of another size."""
    return list(damaged_files(metadata, table, location, listing).values())


def all_keys(metadata: fluss.FlussMetadata, root: str) -> list[str]:
    """Every key of the snapshot's files, its own and the shared ones."""
    return [*metadata.own, *(root + path for path in metadata.shared)]


def register_command(
    table: fluss.FlussTable, stream: str, location: fluss.FlussLocation, store: ObjectStore
) -> RegisterSnapshot:
    """The ``RegisterSnapshot`` of the bucket snapshot whose ``_METADATA`` arrived."""
    key = location.metadata_key(table.prefix)
    common: ArrivedManifest = {
        "stream": stream,
        "partition": location.bucket,
        "lsn": location.number,
        "snapshot_id": location.snapshot_id,
        "manifest_key": key,
    }
    raw = read_arrived(store, common)
    if isinstance(raw, RegisterSnapshot):
        return raw
    digest = manifest_digest(raw)
    try:
        metadata = fluss.parse_metadata(raw, table, location)
    except fluss.MetadataError as bad:
        return RegisterSnapshot(
            **common, manifest_digest=digest, rejection=join_problems(bad.problems)
        )
    listing = listed(store, table, location, shared=bool(metadata.shared))
    problems = file_problems(metadata, table, location, listing)
    if problems:
        return RegisterSnapshot(**common, manifest_digest=digest, rejection=join_problems(problems))
    summary = ManifestSummary(
        epoch=FLUSS_EPOCH,
        file_count=len(metadata.own) + len(metadata.shared),
        total_bytes=metadata.total_bytes,
        source_kind=fluss.SOURCE_KIND,
        format=fluss.FORMAT,
        offsets={LOG_OFFSET: metadata.log_offset},
        references=tuple(sorted(metadata.shared)) or None,
        origin=origin_of(table),
        files_digest=files_digest(all_keys(metadata, location.root(table.prefix)), listing),
    )
    # No shared_written: a shared SST Fluss names is guarded by ZooKeeper's list of the
    # snapshots Fluss keeps (GC and the sweep read it: services/fluss_gc.py), whatever its age.
    return RegisterSnapshot(**common, manifest_digest=digest, summary=summary)
