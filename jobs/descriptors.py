"""The JSON a job writes last: a snapshot's ``_manifest.json`` (manifest format v1, the
ledger's ``snapledger.models.manifest.ManifestV1``) and a restore's ``_restore.json``.

Plain dicts: the job cannot import the ledger's pydantic model; tests/jobs validates every
manifest a job writes against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from jobs.output import DataFile

PRODUCER = {"name": "snapledger-jobs", "version": "0.1.0"}
RESTORE_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Provenance:
    """What an output was built from."""

    job_id: str
    base_snapshot_id: str | None
    base_lsn: int | None
    changelog_from_lsn: int | None  # first LSN applied; None when no record was applied
    changelog_to_lsn: int | None
    base_offsets: dict[str, int] | None = None  # the base manifest's input positions


def manifest(
    *,
    stream: str,
    partition: int,
    lsn: int,
    snapshot_id: str,
    epoch: int,
    kind: str,
    provenance: Provenance,
    files: Sequence[DataFile],
) -> dict[str, object]:
    return {
        "format_version": 1,
        "stream": stream,
        "partition": partition,
        "lsn": lsn,
        "snapshot_id": snapshot_id,
        "epoch": epoch,
        "created_at": _now(),
        "producer": dict(PRODUCER),
        "source": {
            "kind": kind,
            "base_snapshot_id": provenance.base_snapshot_id,
            "base_lsn": provenance.base_lsn,
            "changelog_from_lsn": provenance.changelog_from_lsn,
            "job_id": provenance.job_id,
        },
        "files": [f.to_json() for f in files],
        "row_count": sum(f.rows for f in files),
    }


def restore_descriptor(
    *, stream: str, partition: int, lsn: int, provenance: Provenance, files: Sequence[DataFile]
) -> dict[str, object]:
    """``_restore.json``: the state of one partition as of ``lsn`` (docs/jobs.md)."""
    return {
        "format_version": RESTORE_FORMAT_VERSION,
        "job_id": provenance.job_id,
        "stream": stream,
        "partition": partition,
        "lsn": lsn,
        "base": None
        if provenance.base_snapshot_id is None
        else {
            "snapshot_id": provenance.base_snapshot_id,
            "lsn": provenance.base_lsn,
            "offsets": provenance.base_offsets,
        },
        "changelog_from_lsn": provenance.changelog_from_lsn,
        "changelog_to_lsn": provenance.changelog_to_lsn,
        "created_at": _now(),
        "producer": dict(PRODUCER),
        "files": [f.to_json() for f in files],
        "row_count": sum(f.rows for f in files),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
