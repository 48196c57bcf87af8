"""Commands: what a caller asks of a lineage. ``decide`` turns one into events."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from snapledger.models.base import Frozen


class ManifestSummary(Frozen):
    """What registration keeps of a valid manifest."""

    epoch: int
    file_count: int
    total_bytes: int
    row_count: int | None = None
    source_kind: str | None = None


class RegisterSnapshot(Frozen):
    """Record the snapshot whose manifest arrived at ``manifest_key``.

    Exactly one of ``summary`` (valid) or ``rejection`` (invalid) is set, unless the
    manifest had vanished before it could be read (``manifest_missing``).
    """

    kind: Literal["RegisterSnapshot"] = "RegisterSnapshot"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    manifest_key: str
    manifest_digest: str
    summary: ManifestSummary | None = None
    rejection: str | None = None
    manifest_missing: bool = False
    epoch_hint: int | None = Field(
        default=None, description="The manifest's epoch when readable but otherwise invalid"
    )

    @property
    def command_id(self) -> str:
        return f"register:{self.manifest_key}:{self.manifest_digest}"


class RequestJob(Frozen):
    """Record that a job will work on this lineage, pinning its base snapshot."""

    kind: Literal["RequestJob"] = "RequestJob"
    stream: str
    partition: int
    job_id: str
    job_kind: str
    base_snapshot_id: str | None = None
    base_lsn: int | None = None
    target_lsn: int

    @property
    def command_id(self) -> str:
        return f"request-job:{self.job_id}"


class RecordJobState(Frozen):
    """Record a state the runner reported; a terminal one unpins the base snapshot."""

    kind: Literal["RecordJobState"] = "RecordJobState"
    stream: str
    partition: int
    job_id: str
    state: str
    run_id: str | None = None
    reason: str | None = None

    @property
    def command_id(self) -> str:
        return f"job-state:{self.job_id}:{self.state}"
