"""AccessDenied from AWS becomes AccessDeniedError naming the action and the resource."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from snapledger.adapters.access_denied import report_access_denied
from snapledger.errors import AccessDeniedError

TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/ledger"


def _client(service: str):  # type: ignore[no-untyped-def]
    return report_access_denied(
        boto3.client(
            service, region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
        )
    )


def test_the_resource_aws_names_in_its_message_is_reported() -> None:
    client = _client("dynamodb")
    with Stubber(client) as stub:
        stub.add_client_error(
            "query",
            service_error_code="AccessDeniedException",
            service_message=(
                "User: arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: "
                f"dynamodb:Query on resource: {TABLE_ARN} because no identity-based policy "
                "allows the dynamodb:Query action"
            ),
            http_status_code=400,
        )
        with pytest.raises(AccessDeniedError) as raised:
            client.query(TableName="ledger", KeyConditionExpression="pk = :p")
    assert raised.value.action == "dynamodb:Query"
    assert raised.value.resource == TABLE_ARN
    assert "Grant it to the role" in str(raised.value)


def test_without_a_resource_in_the_message_the_request_names_it() -> None:
    client = _client("s3")
    with Stubber(client) as stub:
        stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
        with pytest.raises(AccessDeniedError) as raised:
            client.get_object(Bucket="bkt", Key="snapshots/a/_manifest.json")
    assert raised.value.action == "s3:GetObject"
    assert raised.value.resource == "arn:aws:s3:::bkt/snapshots/a/_manifest.json"


def test_a_transaction_names_its_tables_and_emr_its_job_run() -> None:
    dynamodb = _client("dynamodb")
    with Stubber(dynamodb) as stub:
        stub.add_client_error("transact_write_items", service_error_code="AccessDeniedException")
        with pytest.raises(AccessDeniedError, match="table ledger") as raised:
            dynamodb.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": "ledger", "Item": {"pk": {"S": "x"}}}},
                    {"Delete": {"TableName": "ledger", "Key": {"pk": {"S": "y"}}}},
                ]
            )
    # IAM has no TransactWriteItems action: it checks each item's own
    assert raised.value.action == "dynamodb:DeleteItem or dynamodb:PutItem"
    emr = _client("emr-serverless")
    with Stubber(emr) as stub:
        stub.add_client_error("get_job_run", service_error_code="AccessDeniedException")
        with pytest.raises(AccessDeniedError) as raised:
            emr.get_job_run(applicationId="app1", jobRunId="run1")
    assert raised.value.action == "emr-serverless:GetJobRun"
    assert raised.value.resource == "EMR Serverless application app1, job run run1"


def test_the_iam_action_is_named_not_the_api_name_and_quotes_are_dropped() -> None:
    client = _client("s3")
    with Stubber(client) as stub:
        stub.add_client_error("head_object", service_error_code="AccessDenied")
        stub.add_client_error(
            "list_objects_v2",
            service_error_code="AccessDenied",
            service_message=(
                "User: arn:aws:sts::1:assumed-role/r/s is not authorized to perform: "
                's3:ListBucket on resource: "arn:aws:s3:::bkt" because no identity-based '
                "policy allows the s3:ListBucket action"
            ),
        )
        with pytest.raises(AccessDeniedError) as head:
            client.head_object(Bucket="bkt", Key="k")
        with pytest.raises(AccessDeniedError) as listing:
            client.list_objects_v2(Bucket="bkt", Prefix="snapshots/")
    assert head.value.action == "s3:GetObject"
    assert (listing.value.action, listing.value.resource) == ("s3:ListBucket", "arn:aws:s3:::bkt")


def test_other_errors_stay_client_errors() -> None:
    client = _client("s3")
    with Stubber(client) as stub:
        stub.add_client_error("head_object", service_error_code="403", http_status_code=403)
        with pytest.raises(ClientError):
            client.head_object(Bucket="bkt", Key="k")
