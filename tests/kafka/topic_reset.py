"""Topics deleted and created again under the same name, as Kafka's application reset and an
operator do: another incarnation of each topic (another topic id, offsets from 0)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from snapledger.local import kafka_topics

#: How long the broker may take to forget a deleted topic before it can be created again.
DELETION_TIMEOUT_S = 60.0


def delete_topics(servers: str, names: Iterable[str]) -> None:
    """Delete the topics and wait until the metadata no longer lists them."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": servers})
    doomed = set(names)
    for future in admin.delete_topics(sorted(doomed), operation_timeout=30).values():
        future.result(timeout=30)
    deadline = time.monotonic() + DELETION_TIMEOUT_S
    while doomed & set(admin.list_topics(timeout=30).topics):
        assert time.monotonic() < deadline, f"{sorted(doomed)} still listed after deletion"
        time.sleep(0.2)


def create_again(
    servers: str,
    names: Iterable[str],
    *,
    partitions: int,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create deleted topics again, retried while the broker still removes the old ones
    ("marked for deletion")."""
    deadline = time.monotonic() + DELETION_TIMEOUT_S
    while True:
        try:
            kafka_topics.create_topics(servers, names, partitions=partitions, config=config)
            return
        except kafka_topics.KafkaTopicsError:
            assert time.monotonic() < deadline, f"{list(names)} could not be created again"
            time.sleep(0.5)
