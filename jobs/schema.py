"""Column layouts of the changelog, of snapshots and of restores (see docs/changelog-format.md)."""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

OP_PUT = "put"
OP_DELETE = "delete"
KNOWN_OPS = (OP_PUT, OP_DELETE)

# Read with an explicit schema so that a file with a missing or mistyped column fails (or
# reads as nulls that validation reports) instead of changing the plan's types.
CHANGELOG_SCHEMA = StructType(
    [
        StructField("key", StringType(), nullable=True),
        StructField("value", BinaryType(), nullable=True),
        StructField("lsn", LongType(), nullable=True),
        StructField("op", StringType(), nullable=True),
        StructField("ts", TimestampType(), nullable=True),
    ]
)

STATE_SCHEMA = StructType(
    [
        StructField("key", StringType(), nullable=False),
        StructField("value", BinaryType(), nullable=True),
        StructField("lsn", LongType(), nullable=False),
    ]
)
STATE_COLUMNS = tuple(STATE_SCHEMA.fieldNames())
