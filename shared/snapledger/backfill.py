"""``python -m snapledger.backfill --table NAME``: one-off, after upgrading a deployment.

Adds the lookup index keys to snapshot records written before they existed, and the TTL
to terminal items written before it existed, and moves HEAD items to their ``by_kind``
shard (see ``adapters/dynamodb_backfill.py``); until it has run, a lookup by id, as of an
LSN or as of a time and GC's planning do not see those older records, and older terminal
items never expire (the lineage walk reads the unsharded HEADs either way). Idempotent:
run it again at any time.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

import boto3

from snapledger.adapters.dynamodb_backfill import backfill_head_kinds, backfill_items
from snapledger.adapters.table_definition import DEFAULT_TABLE_NAME
from snapledger.settings import DEFAULT_LEDGER_TTL_DAYS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m snapledger.backfill", description=__doc__)
    parser.add_argument("--table", default=DEFAULT_TABLE_NAME, help="the ledger table's name")
    parser.add_argument("--region", help="AWS region (default: the SDK's)")
    parser.add_argument("--endpoint-url", help="e.g. DynamoDB Local's")
    parser.add_argument(
        "--ttl-days",
        type=int,
        default=DEFAULT_LEDGER_TTL_DAYS,
        help="the stack's ledger TTL window in days (0: terminal items never expire)",
    )
    args = parser.parse_args(argv)
    client = boto3.client("dynamodb", region_name=args.region, endpoint_url=args.endpoint_url)
    window = timedelta(days=args.ttl_days) if args.ttl_days > 0 else None
    report = backfill_items(client, args.table, ttl_window=window)
    print(
        f"{args.table}: {report.updated} items given their lookup keys or TTL; "
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
