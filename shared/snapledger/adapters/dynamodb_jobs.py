"""Job items on the ledger table: ``JOB#{job_id}`` / ``JOB``, and ``RUN#{run_id}`` pointers.

Every write states its precondition: a job is created only if absent, replaced only if
its version is the one read; the run-id pointer is created only if absent, and given its
TTL (when the job finishes) only if it names that job.

A finished job (SUCCESS, FAILED, CANCELLED) and its run-id pointer carry ``ttl``
(``dynamodb_codec.job_expires``): DynamoDB removes them ``ttl_window`` after the job ended.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters import dynamodb_cursors as cursors
from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.dynamodb_log import LedgerTableClient
from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    KIND_INDEX,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from snapledger.errors import InvalidRequestError
from snapledger.models.jobs import JobRecord
from snapledger.ports import Page

JOB_SK = "JOB"
JOB_KIND = "JOB"


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


RUN_PREFIX = "RUN#"
#: The query a ``list_jobs`` cursor belongs to: the JOB partition of ``by_kind``.
JOBS_CURSOR = cursors.CursorScope(
    attributes=frozenset({KIND_ATTRIBUTE, PARTITION_KEY, SORT_KEY}),
    partition=(KIND_ATTRIBUTE, JOB_KIND),
    sort=PARTITION_KEY,
    prefix=job_pk(""),
    query=KIND_INDEX,
)


def run_pk(run_id: str) -> str:
    return f"{RUN_PREFIX}{run_id}"


class DynamoJobStore(LedgerTableClient):
    """Jobs on the ledger table (the same table and client as the ledger)."""

    def _job_item(self, job: JobRecord) -> dict[str, Any]:
        expires = codec.job_expires(job, self.ttl_window)
        return codec.to_item(job_pk(job.job_id), JOB_SK, job, kind=JOB_KIND, expires=expires)

    def create(self, job: JobRecord) -> JobRecord:
        request = writes.put(self.table_name, self._job_item(job), writes.ABSENT, return_old=True)
        try:
            writes.write(self.client, "put_item", request, what=f"the job {job.job_id}")
        except writes.PreconditionFailed as failed:
            # Created before (a redelivery): the job that exists is the answer.
            found = _job(failed.existing) if failed.existing else self.get(job.job_id)
            if found is None:
                raise writes.translate(failed, what=f"the job {job.job_id}") from failed
            return found
        return job

    def get(self, job_id: str) -> JobRecord | None:
        response = self._call(
            "get_item",
            TableName=self.table_name,
            Key=codec.key(job_pk(job_id), JOB_SK),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _job(item) if item else None

    def replace(self, old: JobRecord, new: JobRecord) -> bool:
        job = self._job_item(new)
        items: list[dict[str, Any]] = [
            {"Put": writes.put(self.table_name, job, writes.AtVersion(old.version))}
        ]
        expires = codec.job_expires(new, self.ttl_window)
        if new.run_id and new.run_id != old.run_id:
            pointer = {**codec.key(run_pk(new.run_id), JOB_SK), "job_id": {"S": new.job_id}}
            if expires is not None:
                pointer[TTL_ATTRIBUTE] = codec.ttl_value(expires)
            # Precondition: a run id names one job only
            items.append({"Put": writes.put(self.table_name, pointer, writes.ABSENT)})
        elif new.run_id and expires is not None and not old.terminal:
            items.append(self._pointer_expiry(new.run_id, new.job_id, expires))
        try:
            writes.transact(self.client, items, what=f"the job {new.job_id}")
        except writes.PreconditionFailed:
            return False
        return True

    def _pointer_expiry(self, run_id: str, job_id: str, expires: datetime) -> dict[str, Any]:
        """The run-id pointer's TTL, set as its job finishes (created if it was missing)."""
        # Precondition: the pointer names this job (or is missing: it then does).
        names_this_job = writes.Matches(
            "attribute_not_exists(#sk) OR #job = :job",
            {"#sk": SORT_KEY, "#job": "job_id", "#ttl": TTL_ATTRIBUTE},
            {":job": {"S": job_id}, ":ttl": codec.ttl_value(expires)},
        )
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": codec.key(run_pk(run_id), JOB_SK),
                "UpdateExpression": "SET #job = :job, #ttl = :ttl",
                **writes.condition(names_this_job),
            }
        }

    def find_by_run_id(self, run_id: str) -> JobRecord | None:
        response = self._call(
            "get_item",
            TableName=self.table_name,
            Key=codec.key(run_pk(run_id), JOB_SK),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return self.get(item["job_id"]["S"]) if item else None

    def list_jobs(self, *, limit: int = 100, cursor: str | None = None) -> Page[JobRecord]:
        """All jobs through the sparse ``by_kind`` index, a page at a time."""
        if not 1 <= limit <= 1000:
            raise InvalidRequestError(f"limit must be between 1 and 1000, got {limit}")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": KIND_INDEX,
            "KeyConditionExpression": "#kind = :kind",
            "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE},
            "ExpressionAttributeValues": {":kind": {"S": JOB_KIND}},
            "Limit": limit,
        }
        if cursor:
            request["ExclusiveStartKey"] = cursors.decode_cursor(cursor, JOBS_CURSOR)
        response = self._call("query", **request)
        last = response.get("LastEvaluatedKey")
        jobs = [_job(item) for item in response.get("Items", [])]
        return Page(jobs, cursors.encode_cursor(last, JOBS_CURSOR) if last else None)

    def _call(self, operation: str, **kwargs: Any) -> Any:
        return writes.read(getattr(self.client, operation), what="a read of the jobs", **kwargs)


def _job(item: dict[str, Any]) -> JobRecord:
    return JobRecord.model_validate(codec.plain(item))
