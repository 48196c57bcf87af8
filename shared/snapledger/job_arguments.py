"""The contract between the launcher and the Spark entry point: its argument list.

``jobs/entrypoint.py`` parses exactly these (docs/jobs.md); tests/test_job_contract.py
checks that what we send is what the job accepts.
"""

from __future__ import annotations

from snapledger.core.coverage import LATEST_AVAILABLE
from snapledger.ports import JobRunSpec


def job_arguments(spec: JobRunSpec) -> list[str]:
    """The entry point's arguments for ``spec``.

    Each partition runs to its planned target: one ``--target-lsn`` when the partitions
    agree on it, else a ``--target PARTITION=LSN`` each (a stream restored to a
    generation, partitions whose changelogs end apart). Snapshots it writes carry the
    lineages' writer epoch, so a compaction is never fenced by the writer whose state it
    compacts.
    """
    partitions = sorted(spec.partitions, key=lambda p: p.partition)
    targets = {p.target_lsn for p in partitions}
    epochs = {p.epoch for p in partitions}
    one_target = str(next(iter(targets))) if len(targets) == 1 else LATEST_AVAILABLE
    args = [
        "--kind",
        spec.kind,
        "--root",
        spec.root,
        "--stream",
        spec.stream,
        "--partitions",
        ",".join(str(p.partition) for p in partitions),
        "--target-lsn",
        one_target,
        "--job-id",
        spec.job_id,
        "--epoch",
        str(max(epochs, default=0)),
    ]
    for plan in partitions:
        if plan.base_prefix is not None:
            args += ["--base", f"{plan.partition}={plan.base_prefix}"]
        if len(targets) > 1:
            args += ["--target", f"{plan.partition}={plan.target_lsn}"]
    return args
