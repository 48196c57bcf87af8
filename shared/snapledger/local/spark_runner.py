"""The job runner of the embedded default: the Spark entry point on a local SparkSession.

Runs ``jobs.job.run_job`` with the very arguments EMR Serverless would get
(``job_arguments``), one job at a time on a background thread sharing one SparkSession,
and reports what EMR Serverless reports: state changes as ``Job Run State Change`` events
to the job_state function, and the manifests the job wrote as S3 notifications to the
register function (both through the router). The same job id starts once.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapledger.errors import JobStartError
from snapledger.job_arguments import job_arguments
from snapledger.job_kinds import job_kind
from snapledger.models.jobs import JobState
from snapledger.ports import FoundJobRun, JobRunSpec, JobRunStatus

if TYPE_CHECKING:
    from datetime import datetime

    from snapledger.local.router import Router

_log = logging.getLogger(__name__)
# A local session lives long and runs many different jobs. Spark keeps the classes it
# generates for 100 queries' operators by default; a restore alone needs 47, a full
# replay 67, so jobs that alternate evicted each other's classes, and each run compiled
# them again (Janino, then the JIT). Interleaved restores, full replays and bootstraps
# at 10M rows: 39-47 compilations per restore and 1.8-2.4 CPU s in the JIT's C2 thread,
# against none and 0.7-1.3 s with room for 1000.
LONG_LIVED_SESSION_CONF = {"spark.sql.codegen.cache.maxEntries": "1000"}
# file:// through Hadoop's raw local FS: its default local FS is a ChecksumFileSystem,
# which computes a CRC of every byte Spark writes into a ".name.crc" beside it (S3, the
# store this stands in for, has no such files), and opens and checks them on reads.
RAW_LOCAL_FS_CONF = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}
LOCAL_SESSION_CONF = {**LONG_LIVED_SESSION_CONF, **RAW_LOCAL_FS_CONF}
SPARK_CONF = {
    **LOCAL_SESSION_CONF,
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
}


#: Spark's own log (log4j2) when it goes to a file: everything there, only errors on the
#: console. ``{path}`` is the log file. PySpark's gateway prints "Setting default log level
#: to WARN" (two lines, on the console) unless its own logger has a level of its own equal
#: to the root's: ``logger.gateway`` gives it one.
LOG4J2_TO_FILE = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
rootLogger.appenderRef.console.ref = console
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = info
"""


def local_spark_session(log_file: Path | None = None) -> Any:
    """One local SparkSession (2 cores), created on first use. With ``log_file``, Spark's
    own log goes there (INFO and up) and only its errors reach the console."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("snapledger-local")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    if log_file is not None:
        config = log_file.with_suffix(".log4j2.properties")
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(LOG4J2_TO_FILE.format(path=log_file.resolve()))
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={config.resolve()}"
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class LocalSparkRunner:
    """A JobRunner for one machine; ``bind`` a Router so its events reach the functions."""

    def __init__(self, spark: Any = None, *, log_file: Path | None = None) -> None:
        """``spark``: a session to share (not stopped on close); else one is made on use,
        logging to ``log_file`` when given (``local_spark_session``)."""
        self._owns_spark = spark is None
        self._spark: Any = spark
        self._log_file = log_file
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-spark")
        self._lock = threading.Lock()
        self._runs: dict[str, JobRunStatus] = {}
        self._futures: list[Future[None]] = []
        self._router: Router | None = None

    def spark(self) -> Any:
        """The SparkSession jobs run in (made on first use)."""
        with self._lock:
            if self._spark is None:
                self._spark = local_spark_session(self._log_file)
            return self._spark

    def bind(self, router: Router) -> None:
        self._router = router

    def size(self, spec: JobRunSpec) -> None:
        return None  # the local session's own, whatever the input

    def start(self, spec: JobRunSpec) -> str:
        run_id = run_id_of(spec.job_id)
        with self._lock:
            if run_id in self._runs:
                return run_id  # like a client token: the same job starts once
            if self._router is None:
                raise JobStartError("the local runner has no router bound: call bind(router)")
            self._runs[run_id] = JobRunStatus(state=JobState.SUBMITTED)
            self._futures.append(self._executor.submit(self._run, spec, run_id))
        return run_id

    def status(self, run_id: str) -> JobRunStatus:
        with self._lock:
            return self._runs.get(run_id, JobRunStatus(state=JobState.FAILED, reason="unknown run"))

    def find_run(self, job_id: str, *, created_after: datetime) -> FoundJobRun | None:
        """The run this process started for ``job_id`` (runs live as long as the process:
        one started before a restart is gone with it, so None is the truth then)."""
        run_id = run_id_of(job_id)
        with self._lock:
            status = self._runs.get(run_id)
        if status is None:
            return None
        return FoundJobRun(run_id=run_id, state=status.state, reason=status.reason)

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every job started so far (and what it triggered) to finish."""
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            if not pending:
                return
            for future in pending:
                future.result(timeout=timeout)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._spark is not None and self._owns_spark:
            self._spark.stop()
        self._spark = None

    def _report(self, spec: JobRunSpec, run_id: str, state: JobState, reason: str = "") -> None:
        with self._lock:
            previous = self._runs[run_id].state
            self._runs[run_id] = JobRunStatus(state=state, reason=reason or None)
        assert self._router is not None
        self._router.job_state(
            job_id=spec.job_id, run_id=run_id, state=state, previous=previous, details=reason
        )

    def _run(self, spec: JobRunSpec, run_id: str) -> None:
        from jobs.args import parse_job_args
        from jobs.errors import JobError
        from jobs.job import run_job

        assert self._router is not None
        try:
            self._report(spec, run_id, JobState.RUNNING)
            result = run_job(self.spark(), parse_job_args(job_arguments(spec)))
        except JobError as exc:
            self._report(spec, run_id, JobState.FAILED, f"Job failed: {exc}")
            return
        except Exception as exc:  # any other failure is the job's too, with its cause
            _log.exception("local job %s failed", spec.job_id)
            self._report(spec, run_id, JobState.FAILED, f"Job failed: {type(exc).__name__}: {exc}")
            return
        for partition in result.partitions:
            if job_kind(spec.kind).writes_snapshot:  # its manifest: S3 would notify register
                info = self._router.store.head(partition.descriptor_key)
                if info is not None:
                    self._router.object_created(info)
        self._report(spec, run_id, JobState.SUCCESS)


def run_id_of(job_id: str) -> str:
    """The local run id of a job: one per job id (what a client token gives on EMR)."""
    return "local-" + hashlib.sha256(job_id.encode()).hexdigest()[:16]
