"""The job kinds, one row each: what a kind starts from, what it writes, how it is chosen.

The control plane (launch, the lineage Decider) and the data plane (``jobs/``, which
carries this module in its zip) look a kind up here instead of comparing its name, so a
new kind is a new row. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from snapledger.layout import MANIFEST_NAME

RESTORE_DESCRIPTOR_NAME = "_restore.json"


class Base(StrEnum):
    """Where a kind's state starts."""

    NONE = "none"  # empty state (LSN -1): the whole changelog is applied
    REQUIRED = "required"  # a snapshot of every partition
    OPTIONAL = "optional"  # a snapshot where given, else empty state (a full replay)


@dataclass(frozen=True, slots=True)
class JobKindSpec:
    """One kind of job."""

    name: str
    base: Base
    #: The output is a new snapshot (registered by its manifest), else a restore's folder.
    writes_snapshot: bool
    #: Its launch may choose the base (``from``: latest, by id, as of an LSN or a time);
    #: otherwise the base is the latest (or none).
    chooses_base: bool
    #: At most one per lineage at a time: HEAD names it while it runs (compaction_job_id).
    one_per_lineage: bool

    @property
    def descriptor_name(self) -> str:
        """The file written last into each output folder: the commit."""
        return MANIFEST_NAME if self.writes_snapshot else RESTORE_DESCRIPTOR_NAME


JOB_KINDS: dict[str, JobKindSpec] = {
    spec.name: spec
    for spec in (
        JobKindSpec(
            "bootstrap",
            Base.NONE,
            writes_snapshot=True,
            chooses_base=False,
            one_per_lineage=False,
        ),
        JobKindSpec(
            "compaction",
            Base.REQUIRED,
            writes_snapshot=True,
            chooses_base=False,
            one_per_lineage=True,
        ),
        JobKindSpec(
            "restore",
            Base.OPTIONAL,
            writes_snapshot=False,
            chooses_base=True,
            one_per_lineage=False,
        ),
    )
}


def job_kind(name: str) -> JobKindSpec:
    """The row of ``name``; ValueError naming the kinds there are."""
    try:
        return JOB_KINDS[name]
    except KeyError:
        raise ValueError(f"job kind {name!r} is not one of {', '.join(JOB_KINDS)}") from None
