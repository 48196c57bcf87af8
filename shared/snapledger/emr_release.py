"""The EMR Serverless release the Spark jobs run on, and the interpreter they run under.

One place for what the CDK app (``infra/constants.py`` re-exports these), the launcher
(``snapledger.adapters.emr_serverless``) and the local runtime's sample events share: the
function code may not import ``infra``. tests/infra/test_definitions.py checks that the
release, the local pyspark pin, this interpreter and the jobs' own minimum agree.
"""

from __future__ import annotations

# The release the app deploys. AWS's release guide, "Amazon runtime for Apache Spark
# (emr-spark-8.0.0)": Spark 4.0.2-amzn-0 and Python 3.11, 3.12 and 3.13 (docs/jobs.md,
# "The interpreter", cites the page and says what it does not state).
EMR_RELEASE_LABEL = "emr-spark-8.0.0"
EMR_SPARK_VERSION = "4.0"  # major.minor; the local pyspark pin must match it

# The Python every job runs under, on the driver and the executors: StartJobRun names it
# rather than trusting the image's default ``python3``. 3.11 is the oldest Python the
# release ships, the oldest the jobs accept (``jobs/entrypoint.py`` checks it) and the one
# the project's tests run them on. The release notes give versions, not paths: this is
# where Amazon Linux's python3.11 package installs it (docs/jobs.md says what is confirmed).
JOB_PYTHON = "/usr/bin/python3.11"
