"""Job items on the ledger table: ``JOB#{job_id}`` / ``JOB``, and ``RUN#{run_id}`` pointers.

Every write states its precondition: a job is created only if absent, replaced only if
its version is the one read; the run-id pointer is created only if absent, and given its
TTL (when the job finishes) only if it names that job.

A finished job (SUCCESS, FAILED, CANCELLED) and its run-id pointer carry ``ttl``
(``dynamodb_codec.job_expires``): DynamoDB removes them ``ttl_window`` after the job ended.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_log import LedgerTableClient
from snapledger.adapters.table_definition import (
    KIND_ATTRIBUTE,
    KIND_INDEX,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from snapledger.errors import InvalidRequestError, StoreUnavailableError
from snapledger.models.jobs import JobRecord
from snapledger.ports import Page

if TYPE_CHECKING:
    pass

JOB_SK = "JOB"
JOB_KIND = "JOB"


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


RUN_PREFIX = "RUN#"


def run_pk(run_id: str) -> str:
    return f"{RUN_PREFIX}{run_id}"


class DynamoJobStore(LedgerTableClient):
    """Jobs on the ledger table (the same table and client as the ledger)."""

    def _job_item(self, job: JobRecord) -> dict[str, Any]:
        expires = codec.job_expires(job, self.ttl_window)
        return codec.to_item(job_pk(job.job_id), JOB_SK, job, kind=JOB_KIND, expires=expires)

    def create(self, job: JobRecord) -> JobRecord:
        item = self._job_item(job)
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#sk)",
                ExpressionAttributeNames={"#sk": SORT_KEY},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                existing: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
                if existing:
                    return _job(existing)
                found = self.get(job.job_id)
                if found is not None:
                    return found
            raise _unavailable(exc) from exc
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
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table_name,
                    "Item": self._job_item(new),
                    "ConditionExpression": "#version = :old",
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": {":old": {"N": str(old.version)}},
                }
            }
        ]
        expires = codec.job_expires(new, self.ttl_window)
        if new.run_id and new.run_id != old.run_id:
            pointer = {**codec.key(run_pk(new.run_id), JOB_SK), "job_id": {"S": new.job_id}}
            if expires is not None:
                pointer[TTL_ATTRIBUTE] = codec.ttl_value(expires)
            items.append(
                {
                    "Put": {
                        "TableName": self.table_name,
                        "Item": pointer,
                        # Precondition: a run id names one job only
                        "ConditionExpression": "attribute_not_exists(#sk)",
                        "ExpressionAttributeNames": {"#sk": SORT_KEY},
                    }
                }
            )
        elif new.run_id and expires is not None and not old.terminal:
            items.append(self._pointer_expiry(new.run_id, new.job_id, expires))
        try:
            self.client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as exc:
            if _code(exc) in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                return False
            raise _unavailable(exc) from exc
        return True

    def _pointer_expiry(self, run_id: str, job_id: str, expires: datetime) -> dict[str, Any]:
        """The run-id pointer's TTL, set as its job finishes (created if it was missing)."""
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": codec.key(run_pk(run_id), JOB_SK),
                "UpdateExpression": "SET #job = :job, #ttl = :ttl",
                # Precondition: the pointer names this job (or is missing: it then does).
                "ConditionExpression": "attribute_not_exists(#sk) OR #job = :job",
                "ExpressionAttributeNames": {
                    "#sk": SORT_KEY,
                    "#job": "job_id",
                    "#ttl": TTL_ATTRIBUTE,
                },
                "ExpressionAttributeValues": {
                    ":job": {"S": job_id},
                    ":ttl": codec.ttl_value(expires),
                },
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
            request["ExclusiveStartKey"] = codec.decode_cursor(cursor)
        response = self._call("query", **request)
        last = response.get("LastEvaluatedKey")
        jobs = [_job(item) for item in response.get("Items", [])]
        return Page(jobs, codec.encode_cursor(last) if last else None)

    def _call(self, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, operation)(**kwargs)
        except ClientError as exc:
            raise _unavailable(exc) from exc


def _job(item: dict[str, Any]) -> JobRecord:
    return JobRecord.model_validate(codec.plain(item))


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _unavailable(exc: ClientError) -> StoreUnavailableError:
    return StoreUnavailableError(f"DynamoDB refused the job write or read ({_code(exc)}): {exc}")
