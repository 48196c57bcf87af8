"""The job kinds, one row each: what a kind starts from, what it writes, how it is chosen.

The one declaration of a kind: its name (``JobKind``) and everything about it. The
control plane (launch, the lineage Decider, the console and EventBridge requests, the
CDK app's launch rule, the CLI) and the data plane (``jobs/``, which carries this module
in its zip) look a kind up here instead of comparing or listing its name, so a new kind
is a new member and a new row. Standard library only (the job zip imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from snapledger.layout import MANIFEST_NAME

RESTORE_DESCRIPTOR_NAME = "_restore.json"


class JobKind(StrEnum):
    # No docstring: the JSON schemas of the models naming a kind (a job record, a launch
    # request) are wire formats, and a docstring would add a description to them. The
    # members' order is the schemas' and the launch rule's (``LAUNCH_DETAIL_TYPES``).
    BOOTSTRAP = "bootstrap"  # empty base + changelog -> a first snapshot
    RESTORE = "restore"  # a chosen snapshot + changelog tail -> restores/{job_id}/
    COMPACTION = "compaction"  # the latest snapshot + changelog tail -> a new snapshot


class Base(StrEnum):
    """Where a kind's state starts."""

    NONE = "none"  # empty state (LSN -1): the whole changelog is applied
    REQUIRED = "required"  # a snapshot of every partition
    OPTIONAL = "optional"  # a snapshot where given, else empty state (a full replay)


@dataclass(frozen=True, slots=True)
class JobKindSpec:
    """One kind of job."""

    name: JobKind
    base: Base
    #: The output is a new snapshot (registered by its manifest), else a restore's folder.
    writes_snapshot: bool
    #: Its launch may choose the base (``from``: latest, by id, as of an LSN or a time);
    #: otherwise the base is the latest (or none).
    chooses_base: bool
    #: At most one per lineage at a time: HEAD names it while it runs (compaction_job_id).
    one_per_lineage: bool
    #: The EventBridge detail-type that asks for one (source ``snapledger``; the
    #: ``detail`` is the console request without ``action``).
    detail_type: str
    #: Its request may give each partition its own target LSN (``target_lsns``).
    per_partition_targets: bool = False

    @property
    def descriptor_name(self) -> str:
        """The file written last into each output folder: the commit."""
        return MANIFEST_NAME if self.writes_snapshot else RESTORE_DESCRIPTOR_NAME


#: The rows, in the order the kinds are listed to a user (choices, error messages, the
#: manifest's source kinds).
JOB_KINDS: dict[JobKind, JobKindSpec] = {
    spec.name: spec
    for spec in (
        JobKindSpec(
            JobKind.BOOTSTRAP,
            Base.NONE,
            writes_snapshot=True,
            chooses_base=False,
            one_per_lineage=False,
            detail_type="BootstrapRequested",
        ),
        JobKindSpec(
            JobKind.COMPACTION,
            Base.REQUIRED,
            writes_snapshot=True,
            chooses_base=False,
            one_per_lineage=True,
            detail_type="CompactionRequested",
        ),
        JobKindSpec(
            JobKind.RESTORE,
            Base.OPTIONAL,
            writes_snapshot=False,
            chooses_base=True,
            one_per_lineage=False,
            detail_type="RestoreRequested",
            per_partition_targets=True,
        ),
    )
}


#: The kinds' names as a user lists them (``JOB_KINDS``' order): the job's ``--kind``
#: choices and the manifest's job source kinds.
JOB_KIND_NAMES: tuple[str, ...] = tuple(spec.name.value for spec in JOB_KINDS.values())

#: EventBridge detail-type -> the kind it asks for, in ``JobKind``'s order.
DETAIL_TYPE_KINDS: dict[str, JobKind] = {JOB_KINDS[k].detail_type: k for k in JobKind}


def job_kind(name: str) -> JobKindSpec:
    """The row of ``name``; ValueError naming the kinds there are."""
    try:
        return JOB_KINDS[JobKind(name)]
    except ValueError:
        raise ValueError(f"job kind {name!r} is not one of {', '.join(JOB_KINDS)}") from None
