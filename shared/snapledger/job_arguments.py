"""The contract between the launcher and the Spark entry point: its argument list.

``jobs/entrypoint.py`` parses exactly these (docs/jobs.md); a test checks both sides agree.
"""

from __future__ import annotations

import json

from snapledger.ports import JobRunSpec


def job_arguments(spec: JobRunSpec) -> list[str]:
    plan = [p.model_dump(mode="json", exclude_none=True) for p in spec.partitions]
    return [
        "--kind",
        spec.kind,
        "--root",
        spec.root,
        "--stream",
        spec.stream,
        "--job-id",
        spec.job_id,
        "--plan",
        json.dumps(plan, separators=(",", ":"), sort_keys=True),
    ]
