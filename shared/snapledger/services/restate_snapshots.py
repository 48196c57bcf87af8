"""A Restate snapshot, read and checked without reading its data.

The check registration runs on arrival and heal runs on a lineage's latest: every file
``metadata.json`` names is in one listing of the folder with its size, and each SST ends
with RocksDB's table magic (one ranged GET of ``SST_TAIL_BYTES`` per file,
``FILE_READERS`` at a time). Requests per snapshot: 1 GET of metadata.json, 1 listing per
1,000 objects, 1 small GET per SST.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from snapledger.core.manifest_rules import (
    ManifestRejectedError,
    join_problems,
    manifest_digest,
    oversize_reason,
)
from snapledger.errors import ManifestTooLargeError, NotFoundError
from snapledger.layouts import restate
from snapledger.layouts.lineage import RestateArrival
from snapledger.limits import MAX_MANIFEST_BYTES
from snapledger.models.commands import ArrivedManifest, ManifestSummary, RegisterSnapshot
from snapledger.ports import ObjectInfo, ObjectStore

#: SST tails read at once, per snapshot.
FILE_READERS = 16
#: A Restate snapshot has no writer epoch: every one is registered at this one, so none is
#: ever fenced (Restate fences its own writers; a foreign cluster is refused by origin).
RESTATE_EPOCH = 0


def origin_of(metadata: restate.RestateMetadata) -> str:
    """The cluster that wrote a snapshot, as the ledger compares it (Restate's own rule:
    same name and, when given, same fingerprint)."""
    text = f"Restate cluster {metadata.cluster_name!r}"
    if metadata.cluster_fingerprint is not None:
        text += f" (fingerprint {metadata.cluster_fingerprint})"
    return text


def files_digest(expected: Iterable[str], listing: Mapping[str, ObjectInfo]) -> str | None:
    """A digest of the expected files' ETags as listed (None if the store gives none, or
    one is missing): equal while no file is written again with other content."""
    tags = []
    for key in sorted(expected):
        info = listing.get(key)
        if info is None or info.etag is None:
            return None
        tags.append(f"{key.rpartition('/')[2]}\t{info.size}\t{info.etag}")
    return "sha256:" + hashlib.sha256("\n".join(tags).encode()).hexdigest()


@dataclass(frozen=True)
class Checked:
    """What the check found: the problems (empty: restorable as far as it can tell) and
    the digest of the files' ETags."""

    problems: list[str]
    digest: str | None


def file_problems(
    store: ObjectStore,
    location: restate.RestateLocation,
    metadata: restate.RestateMetadata,
    *,
    registered_digest: str | None = None,
) -> Checked:
    """Why the snapshot's files could not be restored from, as far as one listing and
    each SST's footer tell, and (with ``registered_digest``, the digest recorded at
    registration) whether a file was written again since."""
    listing = {info.key: info for info in store.list(location.folder)}
    listed = {key: info.size for key, info in listing.items()}
    expected = restate.expected_files(location, metadata)
    digest = files_digest(expected, listing)
    problems = restate.file_problems(expected, listed)
    if not problems and registered_digest and digest and digest != registered_digest:
        problems.append(
            f"a file under {location.folder!r} was written again since registration (its "
            "S3 ETag differs, though every size and SST footer is as registered): the "
            "snapshot no longer holds the state that was registered"
        )
    if problems:
        return Checked(problems, digest)  # a missing or resized file needs no GET to refuse
    ssts = [key for key in expected if key.endswith(restate.SST_SUFFIX)]

    def footer(key: str) -> str | None:
        problem = restate.sst_footer_problem(store.get_tail(key, restate.SST_TAIL_BYTES))
        return None if problem is None else f"{key!r}: {problem}"

    if len(ssts) <= 1:
        found = [footer(key) for key in ssts]
    else:
        with ThreadPoolExecutor(max_workers=min(FILE_READERS, len(ssts))) as pool:
            found = list(pool.map(footer, ssts))
    return Checked([problem for problem in found if problem is not None], digest)


def check(
    store: ObjectStore,
    location: restate.RestateLocation,
    raw: bytes,
    *,
    registered_digest: str | None = None,
) -> tuple[restate.RestateMetadata, str | None]:
    """The document of ``metadata.json`` (``raw``) and its files' digest, after the file
    check; ManifestRejectedError with the reason when it could not be restored from."""
    metadata = restate.parse_metadata(location, raw)
    checked = file_problems(store, location, metadata, registered_digest=registered_digest)
    if checked.problems:
        raise ManifestRejectedError(join_problems(checked.problems))
    return metadata, checked.digest


def register_command(arrival: RestateArrival, store: ObjectStore) -> RegisterSnapshot:
    """The ``RegisterSnapshot`` of the Restate snapshot whose ``metadata.json`` arrived."""
    location = arrival.location
    common: ArrivedManifest = {
        "stream": arrival.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
        "manifest_key": location.metadata_key,
    }
    try:
        raw = store.get(location.metadata_key, max_bytes=MAX_MANIFEST_BYTES)
    except NotFoundError:
        return RegisterSnapshot(**common, manifest_digest="missing", manifest_missing=True)
    except ManifestTooLargeError:
        info = store.head(location.metadata_key)
        size = info.size if info else MAX_MANIFEST_BYTES + 1
        return RegisterSnapshot(
            **common, manifest_digest=f"oversize:{size}", rejection=oversize_reason(size)
        )
    digest = manifest_digest(raw)
    try:
        metadata, files = check(store, location, raw)
    except ManifestRejectedError as rejected:
        return RegisterSnapshot(**common, manifest_digest=digest, rejection=rejected.reason)
    summary = ManifestSummary(
        epoch=RESTATE_EPOCH,
        file_count=len(metadata.files),
        total_bytes=metadata.total_bytes,
        source_kind=restate.NAME,
        format=restate.FORMAT,
        origin=origin_of(metadata),
        files_digest=files,
    )
    return RegisterSnapshot(**common, manifest_digest=digest, summary=summary)
