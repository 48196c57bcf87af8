"""The contract between the launcher and the Spark entry point: its argument list.

``jobs/entrypoint.py`` parses exactly these (docs/jobs.md); tests/test_job_contract.py
checks that what we send is what the job accepts.
"""

from __future__ import annotations

from snapledger.core.coverage import LATEST_AVAILABLE
from snapledger.ports import JobRunSpec


def job_arguments(spec: JobRunSpec) -> list[str]:
    """The entry point's arguments for ``spec``.

    The job takes one target for all its partitions: the planned target when the
    partitions agree on it, else each partition's end of changelog (which the launch
    checked is reachable). Snapshots it writes carry the lineages' writer epoch, so a
    compaction is never fenced by the writer whose state it compacts.
    """
    partitions = sorted(spec.partitions, key=lambda p: p.partition)
    targets = {p.target_lsn for p in partitions}
    epochs = {p.epoch for p in partitions}
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
        str(targets.pop()) if len(targets) == 1 else LATEST_AVAILABLE,
        "--job-id",
        spec.job_id,
        "--epoch",
        str(max(epochs, default=0)),
    ]
    for plan in partitions:
        if plan.base_prefix is not None:
            args += ["--base", f"{plan.partition}={plan.base_prefix}"]
    return args
