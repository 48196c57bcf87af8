"""The events AWS would send, built for the local runtime's in-process router.

Shapes follow AWS's published samples (tests/events/): the S3 event notification
(``Records``, keys URL-encoded with ``+`` for spaces) and the EventBridge
``EMR Serverless Job Run State Change`` event.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

from snapledger.emr_release import EMR_RELEASE_LABEL

LOCAL_BUCKET = "snapledger-local"
LOCAL_REGION = "us-east-1"
LOCAL_ACCOUNT = "000000000000"
LOCAL_APPLICATION_ID = "local-spark"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def s3_object_created(key: str, size: int, *, bucket: str = LOCAL_BUCKET) -> dict[str, Any]:
    """One S3 ``ObjectCreated:Put`` notification with a single record."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": LOCAL_REGION,
                "eventTime": _now(),
                "eventName": "ObjectCreated:Put",
                "userIdentity": {"principalId": "local"},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {
                    "x-amz-request-id": uuid.uuid4().hex[:16].upper(),
                    "x-amz-id-2": uuid.uuid4().hex,
                },
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "snapledger-local",
                    "bucket": {
                        "name": bucket,
                        "ownerIdentity": {"principalId": "local"},
                        "arn": f"arn:aws:s3:::{bucket}",
                    },
                    "object": {
                        "key": quote_plus(key, safe="/"),
                        "size": size,
                        "eTag": uuid.uuid4().hex,
                        "sequencer": f"{uuid.uuid4().int % 10**16:016X}",
                    },
                },
            }
        ]
    }


def emr_job_state_change(
    *,
    job_id: str,
    run_id: str,
    state: str,
    previous_state: str | None,
    details: str = "",
) -> dict[str, Any]:
    """An EventBridge ``EMR Serverless Job Run State Change`` event."""
    now = _now()
    detail: dict[str, Any] = {
        "jobRunId": run_id,
        "jobRunName": job_id,
        "applicationId": LOCAL_APPLICATION_ID,
        "arn": (
            f"arn:aws:emr-serverless:{LOCAL_REGION}:{LOCAL_ACCOUNT}:"
            f"/applications/{LOCAL_APPLICATION_ID}/jobruns/{run_id}"
        ),
        "releaseLabel": EMR_RELEASE_LABEL,
        "state": state,
        "previousState": previous_state or "",
        "createdBy": f"arn:aws:sts::{LOCAL_ACCOUNT}:assumed-role/local",
        "updatedAt": now,
        "createdAt": now,
    }
    if details:
        detail["stateDetails"] = details
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "EMR Serverless Job Run State Change",
        "source": "aws.emr-serverless",
        "account": LOCAL_ACCOUNT,
        "time": now,
        "region": LOCAL_REGION,
        "resources": [],
        "detail": detail,
    }
