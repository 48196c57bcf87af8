"""``python -m snapledger.backfill --table NAME``: one-off, after upgrading a deployment.

Adds the lookup index keys to snapshot records written before they existed, and moves
HEAD items to their ``by_kind`` shard (see ``adapters/dynamodb_backfill.py``); until it has
run, a lookup by id, as of an LSN or as of a time does not see those older records (the
lineage walk reads the unsharded HEADs either way). Idempotent: run it again at any time.
"""

from __future__ import annotations

import argparse
import sys

import boto3

from snapledger.adapters.dynamodb_backfill import backfill_head_kinds, backfill_lookup_keys
from snapledger.adapters.table_definition import DEFAULT_TABLE_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m snapledger.backfill", description=__doc__)
    parser.add_argument("--table", default=DEFAULT_TABLE_NAME, help="the ledger table's name")
    parser.add_argument("--region", help="AWS region (default: the SDK's)")
    parser.add_argument("--endpoint-url", help="e.g. DynamoDB Local's")
    args = parser.parse_args(argv)
    client = boto3.client("dynamodb", region_name=args.region, endpoint_url=args.endpoint_url)
    report = backfill_lookup_keys(client, args.table)
    print(
        f"{args.table}: {report.updated} snapshot records given their lookup keys; "
        f"{report.skipped_changed} rewritten meanwhile (already have them)"
    )
    heads = backfill_head_kinds(client, args.table)
    print(
        f"{args.table}: {heads.updated} lineage HEADs moved to their index shard; "
        f"{heads.skipped_changed} rewritten meanwhile (already moved)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
