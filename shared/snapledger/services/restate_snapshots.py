"""A Restate snapshot, read and checked without reading its data.

The check registration runs on arrival and heal runs on a lineage's latest: every file
``metadata.json`` names is in one listing of the folder with its size, and each SST ends
with RocksDB's table magic (one ranged GET of ``SST_TAIL_BYTES`` per file,
``FILE_READERS`` at a time); heal and restore-from-chosen also compare the files' ETags with
their digest recorded at registration. Every check runs, even past a failed one, so the
problems name every file at fault and each check it failed. Requests per snapshot: 1 GET
of metadata.json, 1 listing per 1,000 objects, 1 small GET per SST listed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from snapledger.core.manifest_rules import (
    ManifestRejectedError,
    manifest_digest,
)
from snapledger.core.problems import join_problems
from snapledger.layouts import restate
from snapledger.layouts.restate_prefix import RestateArrival
from snapledger.limits import MAX_PROBLEM_CHARS, MAX_RECORDED_PROBLEMS
from snapledger.models.commands import (
    ArrivedManifest,
    ManifestSummary,
    RegisterSnapshot,
)
from snapledger.ports import ObjectInfo, ObjectStore
from snapledger.services.arrived_manifest import read_arrived

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
    """Every check of the snapshot's files that reads none of their data, each run: every
    file ``metadata.json`` names is in one listing with its size; each listed SST ends with
    RocksDB's table magic (a missing one has no footer to read); and, with
    ``registered_digest`` (registration's digest of the files' ETags) and a store that
    lists ETags, whether a file was written again since. The problems: one line per file
    at fault, naming it and each check it failed, then one if the ETags differ."""
    listing = {info.key: info for info in store.list(location.folder)}
    listed = {key: info.size for key, info in listing.items()}
    expected = restate.expected_files(location, metadata)
    digest = files_digest(expected, listing)
    ssts = [key for key in expected if key.endswith(restate.SST_SUFFIX) and key in listed]
    footers = {key: problem for key, problem in sst_footers(store, ssts).items() if problem}
    problems = restate.file_problems(expected, listed, footers)
    if registered_digest and digest and digest != registered_digest:
        resized = any(listed.get(key) != size for key, size in expected.items())
        problems.append(_rewritten(location, expected, ssts, len(problems), resized=resized))
    return Checked(problems, digest)


def capped(problems: list[str]) -> list[str]:
    """``problems`` as a ``SnapshotFoundBroken`` event records them: at most
    ``MAX_RECORDED_PROBLEMS`` lines (the last then counting the rest), each clipped to
    ``MAX_PROBLEM_CHARS``."""
    if len(problems) > MAX_RECORDED_PROBLEMS:
        more = len(problems) - (MAX_RECORDED_PROBLEMS - 1)
        problems = [
            *problems[: MAX_RECORDED_PROBLEMS - 1],
            f"and {more} more problem(s) of this snapshot (files at fault, or its ETags): "
            f"at most {MAX_RECORDED_PROBLEMS} lines are recorded",
        ]
    return [clip(problem) for problem in problems]


def clip(text: str) -> str:
    """``text`` in at most ``MAX_PROBLEM_CHARS`` characters (cut with an ellipsis)."""
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


def sst_footers(store: ObjectStore, ssts: list[str]) -> dict[str, str | None]:
    """Each SST's footer problem (None: it ends as RocksDB's tables do), ``FILE_READERS``
    read at once."""

    def footer(key: str) -> str | None:
        return restate.sst_footer_problem(store.get_tail(key, restate.SST_TAIL_BYTES))

    if len(ssts) <= 1:
        return {key: footer(key) for key in ssts}
    with ThreadPoolExecutor(max_workers=min(FILE_READERS, len(ssts))) as pool:
        return dict(zip(ssts, pool.map(footer, ssts), strict=True))


def _rewritten(
    location: restate.RestateLocation,
    expected: Mapping[str, int],
    ssts: list[str],
    at_fault: int,
    *,
    resized: bool,
) -> str:
    """The line saying the files' ETags differ from their digest at registration, and
    what it can and cannot tell: the ledger keeps one digest of every file's ETag."""
    files = len(expected)
    said = (
        f"the S3 ETags of the {files} file(s) under {location.folder!r} differ from the "
        "digest of them recorded at registration"
    )
    if resized:  # a size is part of the digest
        return (
            f"{said}, as they must when a size differs; the ledger keeps one digest of all "
            "of them, not each file's, so whether another file was written again too cannot "
            "be told"
        )
    fine = (
        f"every file's size and each of the {len(ssts)} SST footer(s) were read and are "
        "as registered"
        if at_fault == 0
        else f"the other {files - at_fault} file(s) were read (sizes, and each SST's footer) "
        "and are as registered"
    )
    return (
        f"{said}: a file was written again since registration, so the snapshot no longer "
        "holds the state that was registered (the ledger keeps one digest of all the files' "
        f"ETags, not each file's, so which file cannot be named); {fine}"
    )


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
    raw = read_arrived(store, common)
    if isinstance(raw, RegisterSnapshot):
        return raw
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
