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
| ``PRODUCER#{producer_id}`` | ``OFFSETS``                     | a producer's offsets        |

A ``KEY#`` sort key that would pass 1,024 bytes is ``KEY#sha256:{hex}`` of the key instead.

Two sparse GSIs, each indexing only the items that carry its key attribute:

- ``by_kind`` (``kind``, ``pk``): HEAD and JOB items (``kind = HEAD`` / ``JOB``), so GC and
  the job sweeper page through all lineages or jobs without a scan; every SNAP item
  (``kind = SNAPSHOT#{snapshot_id}``), so a snapshot is found by id in one Query; and the
  producer-offsets entries (``kind = PRODUCER_OFFSETS``), which the sweep pages through.
- ``registered`` (``pk``, ``registered_sk``): the SNAP items GC still has work or a
  promise for: REGISTERED (``registered_sk`` = their ``sk``), EXPIRING (``EXPIRING#`` +
  ``sk``) and REJECTED (``REJECTED#`` + ``sk``); a DELETED record leaves it. "As of an
  LSN" and "as of a time" read the ``SNAP#`` range (REGISTERED only); GC reads the whole
  lineage partition of the index (live records only, never the DELETED history).

Both are kept by DynamoDB from the SNAP item's own Put: no extra item in a transaction.
SNAP items written before these keys existed get them from ``snapledger.backfill``.

TTL: terminal items (DELETED and REJECTED snapshots, finished jobs and their run-id
pointers, events) carry ``ttl`` (epoch seconds; ``dynamodb_codec.ttl_of``); DynamoDB
deletes them some time after it. Live items never carry it, but for a producer's offsets,
whose ``ttl`` is its expiry (an expired entry reads as absent before DynamoDB removes it).
The name is not ``expires_at``: a hold and the ``SnapshotHeld`` event have a field of that name.
"""

from __future__ import annotations

from typing import Any

PARTITION_KEY = "pk"
SORT_KEY = "sk"
KIND_INDEX = "by_kind"
KIND_ATTRIBUTE = "kind"
REGISTERED_INDEX = "registered"
REGISTERED_SK_ATTRIBUTE = "registered_sk"
TTL_ATTRIBUTE = "ttl"
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
            {"AttributeName": REGISTERED_SK_ATTRIBUTE, "AttributeType": "S"},
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
            },
            {
                "IndexName": REGISTERED_INDEX,
                "KeySchema": [
                    {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": REGISTERED_SK_ATTRIBUTE, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    }


def time_to_live_request(table_name: str) -> dict[str, Any]:
    """Arguments for boto3 ``update_time_to_live``: TTL on, read from ``TTL_ATTRIBUTE``."""
    return {
        "TableName": table_name,
        "TimeToLiveSpecification": {"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    }
