"""Manifest validation, pure: parse, path containment, key agreement, files present,
checksums and the kv-parquet schema.

The I/O (reading the manifest, listing the prefix) is the service's; these functions only
judge what they are given, and every rejection is a sentence a writer can act on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from snapledger.core.checksums import Checksum, ChecksumError, mismatch, parse_checksum
from snapledger.core.parquet_footer import ParquetFooterError, kv_parquet_problems, read_footer
from snapledger.core.problems import join_problems
from snapledger.core.references import reference_problem
from snapledger.layout import SnapshotLocation, path_problem
from snapledger.limits import (
    MAX_EPOCH,
    MAX_INT64,
    MAX_JSON_DEPTH,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
)
from snapledger.models.commands import ManifestSummary
from snapledger.models.manifest import ManifestFile, ManifestV1
from snapledger.models.snapshot import ChangelogHorizon


class ManifestRejectedError(Exception):
    """The manifest is invalid; ``reason`` says why and what to do."""

    def __init__(self, reason: str, *, epoch: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.epoch = epoch


@dataclass(frozen=True, slots=True)
class ParsedManifest:
    manifest: ManifestV1
    digest: str

    @property
    def summary(self) -> ManifestSummary:
        m = self.manifest
        return ManifestSummary(
            epoch=m.epoch,
            file_count=len(m.files),
            total_bytes=m.total_bytes,
            row_count=m.total_rows,
            source_kind=m.source.kind,
            format=m.format,
            offsets=m.offsets,
            generation=m.generation,
            changelog=None
            if m.changelog is None
            else ChangelogHorizon(**m.changelog.model_dump(), read_at=m.created_at),
            references=tuple(r.path for r in m.references) if m.references else None,
        )


def manifest_digest(raw: bytes) -> str:
    """A digest of the manifest's content: of its canonical JSON when it parses, so that
    re-serializing the same manifest is not mistaken for a conflicting rewrite."""
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    except (ValueError, UnicodeError, RecursionError):  # not JSON, or nested past parsing
        return "sha256:" + hashlib.sha256(raw).hexdigest()


def json_depth(document: object) -> int:
    """How deep ``document`` nests (a scalar: 0; ``[]``: 1), walked without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(document, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in node)
    return deepest


def oversize_reason(size: int) -> str:
    return (
        f"the manifest is {size:,} bytes, over the {MAX_MANIFEST_BYTES:,}-byte limit: "
        "write fewer, larger files per snapshot"
    )


def parse_manifest(
    location: SnapshotLocation, raw: bytes, *, max_bytes: int = MAX_MANIFEST_BYTES
) -> ParsedManifest:
    """Parse and check a manifest against its key; raise ManifestRejectedError otherwise."""
    if len(raw) > max_bytes:
        raise ManifestRejectedError(oversize_reason(len(raw)))
    too_deep = False
    try:
        document = json.loads(raw)
    except RecursionError:  # nested too deep for the parser: refused just below
        document, too_deep = None, True
    except (ValueError, UnicodeError) as exc:
        if "integer string conversion" in str(exc):  # Python parses at most 4,300 digits
            raise ManifestRejectedError(
                f"the manifest holds an integer of thousands of digits: every number in a "
                f"manifest is at most {MAX_INT64:,} (docs/limits.md)"
            ) from exc
        raise ManifestRejectedError(f"the manifest is not valid UTF-8 JSON: {exc}") from exc
    if too_deep or json_depth(document) > MAX_JSON_DEPTH:
        raise ManifestRejectedError(
            f"the manifest's JSON nests deeper than {MAX_JSON_DEPTH} levels: a v1 manifest "
            "nests 3 (docs/manifest-v1.schema.json)"
        )
    epoch = document.get("epoch") if isinstance(document, dict) else None
    epoch_hint = (  # recorded with the rejection: only an epoch within its bound
        epoch
        if isinstance(epoch, int) and not isinstance(epoch, bool) and 0 <= epoch <= MAX_EPOCH
        else None
    )
    files = document.get("files") if isinstance(document, dict) else None
    if isinstance(files, list) and len(files) > MAX_MANIFEST_FILES:
        raise ManifestRejectedError(
            f"the manifest lists {len(files):,} files, over the limit of {MAX_MANIFEST_FILES:,}: "
            "write fewer, larger files per snapshot",
            epoch=epoch_hint,
        )
    try:
        manifest = ManifestV1.model_validate(document)
    except ValidationError as exc:
        raise ManifestRejectedError(
            "the manifest does not match format v1 (docs/manifest-v1.schema.json): "
            + _describe(exc),
            epoch=epoch_hint,
        ) from exc
    problems = [
        *_key_disagreements(location, manifest),
        *_path_problems(manifest),
        *_reference_path_problems(location, manifest),
    ]
    if problems:
        raise ManifestRejectedError(join_problems(problems), epoch=manifest.epoch)
    return ParsedManifest(manifest=manifest, digest=manifest_digest(raw))


def check_files_present(
    location: SnapshotLocation, manifest: ManifestV1, sizes: Mapping[str, int]
) -> None:
    """Every listed file exists under the prefix with its stated size (``sizes``: one
    listing of the prefix, key → size)."""
    problems = presence_problems(
        "files",
        [(e.path, e.size) for e in manifest.files],
        location.prefix,
        sizes,
        missing="upload every data file before the manifest",
    )
    if problems:
        raise ManifestRejectedError(join_problems(problems), epoch=manifest.epoch)


def presence_problems(
    field: str,
    entries: Sequence[tuple[str, int]],
    base: str,
    sizes: Mapping[str, int],
    *,
    missing: str,
) -> list[str]:
    """Why each ``field[i]`` entry (path under ``base``, stated size) is not in the store
    with that size (``sizes``: key → size as listed); ``missing``: what to do then."""
    problems = []
    for index, (path, size) in enumerate(entries):
        actual = sizes.get(base + path)
        if actual is None:
            problems.append(
                f"{field}[{index}] {path!r} is not in the store under {base}: {missing}"
            )
        elif actual != size:
            problems.append(
                f"{field}[{index}] {path!r} is {actual:,} bytes in the store but the "
                f"manifest says {size:,}"
            )
    return problems


def checksum_problems(
    index: int, entry: ManifestFile, stored: Callable[[str], bytes | None]
) -> list[str]:
    """The stated checksum of ``entry`` (``files[index]``), if unreadable or not the
    store's digest of the file (``stored(algorithm)``; None: the store holds none of that
    algorithm, nothing to compare)."""
    if entry.checksum is None:
        return []
    try:
        stated = parse_checksum(entry.checksum)
    except ChecksumError as exc:
        return [f"files[{index}] {exc}"]
    digest = stored(stated.algorithm)
    if digest is None:
        return []
    found = mismatch(entry.path, stated, Checksum(stated.algorithm, digest))
    return [f"files[{index}] {found}"] if found else []


def kv_schema_problems(
    index: int, entry: ManifestFile, read_tail: Callable[[int], bytes], size: int
) -> list[str]:
    """Why ``entry`` (``files[index]``) is not a Parquet file of the kv-parquet columns,
    from its footer (``read_tail(n)``: the file's last n bytes); empty when it is."""
    try:
        schema = read_footer(read_tail, size)
    except ParquetFooterError as exc:
        return [
            f"files[{index}] {entry.path!r} is not a readable Parquet file ({exc}): a "
            'kv-parquet snapshot holds Parquet files; declare "format": "opaque" for others'
        ]
    problems = kv_parquet_problems(schema)
    if not problems:
        return []
    return [
        f"files[{index}] {entry.path!r} does not have the kv-parquet columns key (string), "
        f"value (binary), lsn (int64): {'; '.join(problems)}"
    ]


def _path_problems(manifest: ManifestV1) -> list[str]:
    problems = []
    seen: set[str] = set()
    for index, entry in enumerate(manifest.files):
        problem = path_problem(entry.path)
        if problem is not None:
            problems.append(
                f"files[{index}].path {entry.path!r} escapes the snapshot prefix: {problem}; "
                "paths are relative to the snapshot's folder"
            )
        elif entry.path in seen:
            problems.append(f"files[{index}].path {entry.path!r} is listed twice")
        seen.add(entry.path)
    return problems


def _reference_path_problems(location: SnapshotLocation, manifest: ManifestV1) -> list[str]:
    """Each reference names a file of its lineage's area once: under shared/ or another
    snapshot's folder, never escaping the lineage's folder."""
    problems = []
    own = location.prefix.rstrip("/").rpartition("/")[2]
    seen: set[str] = set()
    for index, entry in enumerate(manifest.references or ()):
        problem = reference_problem(entry.path, own)
        if problem is not None:
            problems.append(
                f"references[{index}].path {entry.path!r} is not a file of the lineage's "
                f"area: {problem}; a reference is relative to the lineage's folder "
                f"({location.prefix.rstrip('/').rpartition('/')[0]}/)"
            )
        elif entry.path in seen:
            problems.append(f"references[{index}].path {entry.path!r} is listed twice")
        seen.add(entry.path)
    return problems


def _key_disagreements(location: SnapshotLocation, manifest: ManifestV1) -> list[str]:
    expected = {
        "stream": location.stream,
        "partition": location.partition,
        "lsn": location.lsn,
        "snapshot_id": location.snapshot_id,
    }
    return [
        f"the manifest says {name}={getattr(manifest, name)!r} but its key says {name}={value!r}"
        for name, value in expected.items()
        if getattr(manifest, name) != value
    ]


def _describe(exc: ValidationError) -> str:
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    ]
    return join_problems(parts)
