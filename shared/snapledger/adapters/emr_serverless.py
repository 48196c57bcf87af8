"""The job runner on EMR Serverless: ``StartJobRun`` with the job id as client token, its
workers sized from what it reads within the application's maximum capacity
(snapledger.core.job_sizing)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from snapledger.core.job_sizing import Capacity, JobSize, size_job
from snapledger.emr_release import JOB_PYTHON
from snapledger.errors import AccessDeniedError, JobStartError, StoreUnavailableError
from snapledger.job_arguments import job_arguments
from snapledger.models.jobs import TERMINAL_STATES, reported_state
from snapledger.ports import FoundJobRun, JobRunSpec, JobRunStatus

if TYPE_CHECKING:
    from mypy_boto3_emr_serverless import EMRServerlessClient

#: ``find_run`` reads at most this many ListJobRuns pages (50 runs each) for one job: past
#: them it raises rather than conclude that there is no run.
MAX_RUN_LIST_PAGES = 40
RUNS_PER_PAGE = 50  # ListJobRuns' maximum
TRANSIENT = {"ThrottlingException", "InternalServerException", "ServiceQuotaExceededException"}
# Every place the job's interpreter is chosen, each set to the same Python. Spark's own
# settings come first: the driver runs the entry point under spark.pyspark.driver.python,
# else spark.pyspark.python, before any environment variable, and hands the latter to its
# workers as PYSPARK_PYTHON. The environment variables are AWS's documented way on EMR
# Serverless, and cover whatever reads them rather than Spark's settings.
PYTHON_SETTINGS = (
    "spark.pyspark.driver.python",
    "spark.pyspark.python",
    "spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON",
    "spark.emr-serverless.driverEnv.PYSPARK_PYTHON",
    "spark.executorEnv.PYSPARK_PYTHON",
)


def spark_submit_parameters(py_files: str, size: JobSize | None = None) -> str:
    """``sparkSubmitParameters``: the job's package (when there is one), its Python and
    its size (when known; else the application's default sizes)."""
    parameters = [f"--py-files {py_files}"] if py_files else []
    parameters += [f"--conf {setting}={JOB_PYTHON}" for setting in PYTHON_SETTINGS]
    parameters += size.submit_parameters() if size is not None else []
    return " ".join(parameters)


class EmrServerlessRunner:
    """Starts and inspects job runs on one EMR Serverless application."""

    def __init__(
        self,
        application_id: str,
        execution_role_arn: str,
        entrypoint: str,
        py_files: str = "",
        client: EMRServerlessClient | None = None,
        *,
        capacity: Capacity | None = None,
    ) -> None:
        self.application_id = application_id
        self.execution_role_arn = execution_role_arn
        self.entrypoint = entrypoint
        self.py_files = py_files
        self.capacity = capacity  # the application's maximum; None: default sizes
        self.client: EMRServerlessClient = client or boto3.client("emr-serverless")

    def start(self, spec: JobRunSpec) -> str:
        driver: dict[str, Any] = {
            "entryPoint": self.entrypoint,
            "entryPointArguments": job_arguments(spec),
            "sparkSubmitParameters": spark_submit_parameters(self.py_files, spec.size),
        }
        try:
            response = self.client.start_job_run(
                applicationId=self.application_id,
                clientToken=spec.job_id,  # the same job id never starts a second run
                executionRoleArn=self.execution_role_arn,
                name=spec.job_id,
                jobDriver={"sparkSubmit": driver},  # type: ignore[misc,arg-type]
                tags={"snapledger:job-id": spec.job_id, "snapledger:kind": spec.kind},
            )
        except ClientError as exc:
            raise _translate(exc, f"start job {spec.job_id}") from exc
        except AccessDeniedError as exc:
            # A refused start is a job that cannot start: launch records it FAILED with
            # this reason (naming the action and resource) and releases its pins.
            raise JobStartError(f"EMR Serverless could not start job {spec.job_id}: {exc}") from exc
        return response["jobRunId"]

    def size(self, spec: JobRunSpec) -> JobSize | None:
        """The job's size, if the capacity and every partition's input are known (asked
        once, by the launch, which passes it to ``start`` in ``spec.size``)."""
        if self.capacity is None or any(p.partition not in spec.inputs for p in spec.partitions):
            return None
        inputs = [spec.inputs[p.partition] for p in spec.partitions]
        return size_job(spec.kind, inputs, self.capacity)

    def status(self, run_id: str) -> JobRunStatus:
        try:
            run = self.client.get_job_run(applicationId=self.application_id, jobRunId=run_id)[
                "jobRun"
            ]
        except ClientError as exc:
            raise _translate(exc, f"read job run {run_id}") from exc
        except AccessDeniedError as exc:
            raise JobStartError(f"EMR Serverless could not read job run {run_id}: {exc}") from exc
        return JobRunStatus(
            state=reported_state(run["state"]), reason=run.get("stateDetails") or None
        )

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        """``ListJobRuns`` of this application created since ``created_after``, matched by
        name (``start`` names each run by its job id): a run still going first, else the
        newest. Not a second ``StartJobRun`` with the same client token: EMR Serverless
        does not document how long a token is remembered, so a late one could start a new
        run rather than answer the old one."""
        found: list[dict[str, Any]] = []
        token: str | None = None
        for _ in range(MAX_RUN_LIST_PAGES):
            arguments: dict[str, Any] = {
                "applicationId": self.application_id,
                "createdAtAfter": created_after,
                "maxResults": RUNS_PER_PAGE,
            }
            if token:
                arguments["nextToken"] = token
            try:
                page = self.client.list_job_runs(**arguments)
            except ClientError as exc:
                raise _translate(exc, f"list the job runs to find job {job_id}") from exc
            except AccessDeniedError as exc:
                raise JobStartError(
                    f"EMR Serverless could not list the job runs to find job {job_id}: {exc}"
                ) from exc
            found += [dict(run) for run in page.get("jobRuns", []) if run.get("name") == job_id]
            token = page.get("nextToken")
            if not token:
                return _chosen(found)
        chosen = _chosen(found)
        if chosen is not None and _going(chosen.state):
            return chosen  # nothing further on can matter more than a run still going
        raise StoreUnavailableError(
            f"EMR Serverless has more than {MAX_RUN_LIST_PAGES * RUNS_PER_PAGE} runs created "
            f"since {created_after.isoformat()}, and none still going named {job_id} among "
            "them: could not tell whether it is running; retry later"
        )


def _going(state: str) -> bool:
    return reported_state(state) not in TERMINAL_STATES


def _chosen(runs: list[dict[str, Any]]) -> FoundJobRun | None:
    """A run still going (it holds the job's inputs), else the newest; None for none."""
    if not runs:
        return None

    def rank(run: dict[str, Any]) -> tuple[bool, float]:
        created = run.get("createdAt")
        return _going(str(run["state"])), created.timestamp() if created else 0.0

    run = max(runs, key=rank)
    return FoundJobRun(
        run_id=str(run["id"]),
        state=reported_state(str(run["state"])),
        reason=run.get("stateDetails") or None,
    )


def _translate(exc: ClientError, what: str) -> Exception:
    code = exc.response.get("Error", {}).get("Code", "")
    message = exc.response.get("Error", {}).get("Message", str(exc))
    if code in TRANSIENT:
        return StoreUnavailableError(f"EMR Serverless is busy ({code}) and could not {what}: retry")
    return JobStartError(f"EMR Serverless could not {what} ({code}): {message}")
