"""The KTable checkpointer: a compacted Kafka topic materialized into a table, checkpointed
through snapledger every N records or T seconds, booted from its latest registered
checkpoint (docs/kafka-streams.md, "The KTable checkpointer").

    python -m examples.ktable_checkpointer --topic prices --bootstrap-servers localhost:9092 \\
        --root s3://my-bucket --every-records 10000 --every-seconds 300
"""

from examples.ktable_checkpointer.boot import Boot
from examples.ktable_checkpointer.checkpointer import KTableCheckpointer
from examples.ktable_checkpointer.table import KeyEncodingError, KTableCheckpointerError

__all__ = ["Boot", "KTableCheckpointer", "KTableCheckpointerError", "KeyEncodingError"]
