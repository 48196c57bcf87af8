"""The ledger table's definition: the one source of truth for the CDK app and local runs.

Items (see docs/ledger.md):

| pk                        | sk                               | what                        |
|---------------------------|----------------------------------|-----------------------------|
| ``LIN#{stream}#{part}``   | ``HEAD``                         | the lineage's projection    |
| ``LIN#{stream}#{part}``   | ``SNAP#{lsn:020d}#{id}``         | one snapshot                |
| ``LIN#{stream}#{part}``   | ``EV#{seq:012d}``                | one event of the ledger     |
| ``LIN#{stream}#{part}``   | ``SEG#{first:020d}-{last:020d}`` | one changelog segment seen  |
| ``JOB#{job_id}``          | ``JOB``                          | one job                     |
| ``STREAM#{stream}``       | ``HEAD``                         | the stream's own log's head |
| ``STREAM#{stream}``       | ``EV#{seq:012d}``                | one event of the stream     |
| ``STREAM#{stream}``       | ``POLICY``                       | the stream's retention etc. |
| ``REJECTED``              | ``KEY#{object key}``             | a manifest at a bad key     |

The sparse GSI ``by_kind`` indexes only items that carry ``kind`` (HEAD and JOB items),
so GC and the job sweeper can page through all lineages or jobs without a scan.
"""

from __future__ import annotations

from typing import Any

PARTITION_KEY = "pk"
SORT_KEY = "sk"
KIND_INDEX = "by_kind"
KIND_ATTRIBUTE = "kind"
TTL_ATTRIBUTE = "expires_at"
DEFAULT_TABLE_NAME = "snapledger-ledger"


def create_table_request(table_name: str) -> dict[str, Any]:
    """Arguments for boto3 ``create_table`` matching what the CDK app deploys."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
            {"AttributeName": KIND_ATTRIBUTE, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": KIND_INDEX,
                "KeySchema": [
                    {"AttributeName": KIND_ATTRIBUTE, "KeyType": "HASH"},
                    {"AttributeName": PARTITION_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    }
