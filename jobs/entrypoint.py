"""The one entry point of the data plane.

On EMR Serverless::

    spark-submit --py-files jobs.zip jobs/entrypoint.py --kind compaction --root s3://bucket ...

Locally::

    python -m jobs.entrypoint --kind bootstrap --root file:///tmp/store --stream s ...

Prints the JobResult as one JSON line on success. Exit status: 0 done, 2 bad arguments,
3 bad data (changelog or base snapshot), 4 a Python older than the jobs need, 1 any other
failure; known failures print one line ``error: ...`` on stderr, without a stack trace.
In-process callers use ``jobs.job.run_job`` with their own SparkSession instead.
"""

from __future__ import annotations

import sys

# Everything up to the check below must run on any Python 3.7 or newer (EMR's oldest
# default): on an older interpreter the job's modules fail on import (``datetime.UTC`` is
# 3.11) with an ImportError that names neither the Python it needs nor what to change.
REQUIRED_PYTHON = (3, 11)
WRONG_PYTHON_EXIT = 4
# Where the interpreter is chosen: the settings the launcher ships in sparkSubmitParameters
# (a copy of snapledger.adapters.emr_serverless.PYTHON_SETTINGS, as the job cannot import
# snapledger; tests/jobs/test_wrong_python.py checks the two agree).
PYTHON_SETTINGS = (
    "spark.pyspark.driver.python",
    "spark.pyspark.python",
    "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON",
    "spark.emr-serverless.driverEnv.PYSPARK_PYTHON",
    "spark.executorEnv.PYSPARK_PYTHON",
)


def wrong_python(version_info: tuple[int, ...], executable: str) -> str | None:
    """Why this interpreter cannot run the job, or None when it can."""
    if tuple(version_info[:2]) >= REQUIRED_PYTHON:
        return None
    needed = ".".join(str(part) for part in REQUIRED_PYTHON)
    found = ".".join(str(part) for part in version_info[:3])
    return (
        f"snapledger's Spark jobs need Python {needed} or newer, but this is Python {found} "
        f"({executable or 'unknown path'}): run the job under Python {needed}+ "
        f"(on EMR Serverless set {', '.join(PYTHON_SETTINGS)} in sparkSubmitParameters; "
        "with spark-submit elsewhere set PYSPARK_PYTHON)"
    )


_problem = wrong_python(tuple(sys.version_info), sys.executable)
if _problem is not None:
    print(f"error: {_problem}", file=sys.stderr)
    sys.exit(WRONG_PYTHON_EXIT)

# The interpreter is new enough: the imports of the job itself follow.
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

if not __package__:  # run as a script (spark-submit jobs/entrypoint.py): find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.args import parse_job_args  # noqa: E402
from jobs.errors import JobError  # noqa: E402


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
