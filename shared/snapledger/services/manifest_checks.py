"""A native manifest read and checked for registration: its ``RegisterSnapshot``.

Reads ``_manifest.json`` (at most ``MAX_MANIFEST_BYTES``), lists the snapshot prefix once
(1,000 keys a request) and checks what can be checked of each file without reading its
data, ``FILE_READERS`` files at a time (``check_file_contents``). A manifest gone when read
is ``manifest_missing`` (answered ``vanished`` by ``services/registration.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from snapledger.core.manifest_rules import (
    ManifestRejectedError,
    check_files_present,
    checksum_problems,
    kv_schema_problems,
    manifest_digest,
    parse_manifest,
    presence_problems,
)
from snapledger.core.problems import join_problems
from snapledger.core.references import owner_sort_key
from snapledger.layout import SnapshotLocation, lineage_snapshots_prefix
from snapledger.models.commands import ArrivedManifest, RegisterSnapshot
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds, ObjectStore
from snapledger.services.arrived_manifest import read_arrived
from snapledger.services.latest_protection import hold_snapshot

#: Files whose checksum and footer are read at once, per manifest.
FILE_READERS = 16


#: A layout's checks beyond the native ones: one problem per rule broken (none: it passes).
ExtraChecks = Callable[[SnapshotLocation, ManifestV1, dict[str, int], ObjectStore], list[str]]


def command_for(
    location: SnapshotLocation,
    key: str,
    store: ObjectStore,
    holds: ObjectHolds | None = None,
    *,
    extra: ExtraChecks | None = None,
) -> tuple[RegisterSnapshot, ManifestV1 | None]:
    """The registration command of the manifest at ``key``, and the manifest when valid;
    ``extra``: a layout's checks run after the native ones passed (REJECTED with them)."""
    common: ArrivedManifest = {
        "stream": location.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
        "manifest_key": key,
    }
    raw = read_arrived(store, common)
    if isinstance(raw, RegisterSnapshot):
        return raw, None
    digest = manifest_digest(raw)
    try:
        parsed = parse_manifest(location, raw)
        # One listing of the prefix (1,000 keys a request), not one request per file.
        sizes = {info.key: info.size for info in store.list(location.prefix)}
        check_files_present(location, parsed.manifest, sizes)
        written = check_references_present(location, parsed.manifest, store)
        check_file_contents(location, parsed.manifest, sizes, store)
        problems = [] if extra is None else extra(location, parsed.manifest, sizes, store)
        if problems:
            raise ManifestRejectedError(join_problems(problems), epoch=parsed.manifest.epoch)
    except ManifestRejectedError as rejected:
        command = RegisterSnapshot(
            **common, manifest_digest=digest, rejection=rejected.reason, epoch_hint=rejected.epoch
        )
        return command, None
    if holds is not None:  # before the commit: no snapshot becomes latest unheld
        hold_snapshot(holds, location, parsed.manifest)
    command = RegisterSnapshot(
        **common, manifest_digest=digest, summary=parsed.summary, shared_written=written
    )
    return command, parsed.manifest


def check_references_present(
    location: SnapshotLocation, manifest: ManifestV1, store: ObjectStore
) -> tuple[tuple[str, datetime], ...]:
    """Every reference exists with its stated size: one listing of each folder referenced
    (1,000 keys a request), no data read. Returns when each ``shared/`` reference was
    written (the decision refuses one too old that no registered snapshot references:
    ``core/references.aged_shared``)."""
    references = manifest.references or ()
    if not references:
        return ()
    lineage = lineage_snapshots_prefix(location.stream, location.partition)
    folders = sorted({r.path.partition("/")[0] for r in references})
    found = {info.key: info for folder in folders for info in store.list(f"{lineage}{folder}/")}
    problems = presence_problems(
        "references",
        [(r.path, r.size) for r in references],
        lineage,
        {key: info.size for key, info in found.items()},
        missing="reference only files that exist (GC may have deleted it: upload it again)",
    )
    if problems:
        raise ManifestRejectedError(join_problems(problems), epoch=manifest.epoch)
    return tuple(
        (r.path, info.last_modified)
        for r in references
        if owner_sort_key(r.path) is None and (info := found.get(lineage + r.path)) is not None
    )


def check_file_contents(
    location: SnapshotLocation, manifest: ManifestV1, sizes: dict[str, int], store: ObjectStore
) -> None:
    """What can be checked of each file without reading its data, ``FILE_READERS`` files at
    a time: its stated checksum against the store's (S3: one HeadObject with checksum
    mode) and, for ``kv-parquet``, its schema from the Parquet footer (one ranged GET of
    its tail, rarely two). ``sizes``: the prefix's listing, key → size."""

    def problems_of(index: int) -> list[str]:
        entry = manifest.files[index]
        key = location.prefix + entry.path
        found = checksum_problems(
            index, entry, lambda algorithm: store.stored_checksum(key, algorithm)
        )
        if manifest.format == "kv-parquet":
            found += kv_schema_problems(
                index, entry, lambda length: store.get_tail(key, length), sizes[key]
            )
        return found

    count = len(manifest.files)
    if count <= 1:  # no pool for one file (a thread costs more than its reads here)
        problems = [p for index in range(count) for p in problems_of(index)]
    else:
        with ThreadPoolExecutor(max_workers=min(FILE_READERS, count)) as pool:
            problems = [p for found in pool.map(problems_of, range(count)) for p in found]
    if problems:
        raise ManifestRejectedError(join_problems(problems), epoch=manifest.epoch)
