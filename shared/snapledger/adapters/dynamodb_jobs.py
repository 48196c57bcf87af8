"""Job items on the ledger table: ``JOB#{job_id}`` / ``JOB``, and ``RUN#{run_id}`` pointers.

Every write states its precondition: a job is created only if absent, replaced only if
its version is the one read; the run-id pointer is created only if absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.table_definition import KIND_ATTRIBUTE, KIND_INDEX, SORT_KEY
from snapledger.errors import InvalidRequestError, StoreUnavailableError
from snapledger.models.jobs import JobRecord
from snapledger.ports import Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

JOB_SK = "JOB"
JOB_KIND = "JOB"


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def run_pk(run_id: str) -> str:
    return f"RUN#{run_id}"


class DynamoJobStore:
    """Jobs on the ledger table (the same table and client as the ledger)."""

    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.client: DynamoDBClient = client or boto3.client("dynamodb")

    def create(self, job: JobRecord) -> JobRecord:
        item = codec.to_item(job_pk(job.job_id), JOB_SK, job, kind=JOB_KIND)
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
                    "Item": codec.to_item(job_pk(new.job_id), JOB_SK, new, kind=JOB_KIND),
                    "ConditionExpression": "#version = :old",
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": {":old": {"N": str(old.version)}},
                }
            }
        ]
        if new.run_id and new.run_id != old.run_id:
            items.append(
                {
                    "Put": {
                        "TableName": self.table_name,
                        "Item": {
                            **codec.key(run_pk(new.run_id), JOB_SK),
                            "job_id": {"S": new.job_id},
                        },
                        # Precondition: a run id names one job only
                        "ConditionExpression": "attribute_not_exists(#sk)",
                        "ExpressionAttributeNames": {"#sk": SORT_KEY},
                    }
                }
            )
        try:
            self.client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as exc:
            if _code(exc) in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                return False
            raise _unavailable(exc) from exc
        return True

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
