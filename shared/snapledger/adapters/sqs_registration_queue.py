"""The SQS FIFO queue ``register`` hands manifests to: one message group per lineage.

S3 cannot notify a FIFO queue, so the bucket notifies ``register`` (intake), which sends
each manifest here with ``MessageGroupId`` = its lineage and a deduplication id from the
object (key and S3 sequencer). Lambda's event source mapping then delivers at most one
batch per message group at a time: one writer per lineage, in parallel across lineages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from snapledger.errors import StoreUnavailableError
from snapledger.ports import QueuedManifest

#: SendMessageBatch takes at most 10 entries.
MAX_BATCH_ENTRIES = 10


class SqsRegistrationQueue:
    """``RegistrationQueue`` on an SQS FIFO queue: SendMessageBatch, 10 entries a request."""

    def __init__(
        self, queue_url: str, client: Any
    ) -> None:  # a boto3 SQS client (no stubs installed)
        self.queue_url = queue_url
        self.client = client

    def send(self, messages: Sequence[QueuedManifest]) -> None:
        failed: list[str] = []
        cause: Exception | None = None
        for start in range(0, len(messages), MAX_BATCH_ENTRIES):
            chunk = messages[start : start + MAX_BATCH_ENTRIES]
            entries = [
                {
                    "Id": str(index),
                    "MessageBody": message.key,
                    "MessageGroupId": message.group_id,
                    "MessageDeduplicationId": message.deduplication_id,
                }
                for index, message in enumerate(chunk)
            ]
            try:
                response = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            except ClientError as exc:
                failed += [m.key for m in chunk]
                cause = exc
                continue
            for entry in response.get("Failed", []):
                failed.append(chunk[int(entry["Id"])].key)
                cause = StoreUnavailableError(f"{entry.get('Code')}: {entry.get('Message')}")
        if failed:
            raise StoreUnavailableError(
                f"{len(failed)} manifest(s) could not be queued for registration "
                f"({cause}); the delivery will be retried: {', '.join(failed)}"
            )
