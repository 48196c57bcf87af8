"""The one entry point of the data plane.

On EMR Serverless::

    spark-submit --py-files jobs.zip jobs/entrypoint.py --kind compaction --root s3://bucket ...

Locally::

    python -m jobs.entrypoint --kind bootstrap --root file:///tmp/store --stream s ...

Prints the JobResult as one JSON line on success. Exit status: 0 done, 2 bad arguments,
3 bad data (changelog or base snapshot), 1 any other failure; known failures print one
line ``error: ...`` on stderr, without a stack trace. In-process callers use
``jobs.job.run_job`` with their own SparkSession instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # run as a script (spark-submit jobs/entrypoint.py): find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.args import parse_job_args
from jobs.errors import JobError


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_job_args(sys.argv[1:] if argv is None else argv)
    except JobError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    from pyspark.sql import SparkSession  # after argument checks: a bad flag costs no JVM

    from jobs.job import run_job

    existing = SparkSession.getActiveSession()
    spark = existing or SparkSession.builder.appName(f"snapledger-{args.kind}").getOrCreate()
    try:
        result = run_job(spark, args)
    except JobError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    finally:
        if existing is None:  # only stop a session this call started
            spark.stop()
    print(result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
