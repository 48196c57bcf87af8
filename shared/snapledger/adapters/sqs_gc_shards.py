"""The GC shard queue on SQS: ten messages per ``SendMessageBatch`` (IAM: sqs:SendMessage)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from snapledger.errors import InvalidRequestError, StoreUnavailableError

MAX_ENTRIES = 10


class SqsShardQueue:
    """``ShardQueue`` (services/gc_deps.py) on one SQS queue."""

    def __init__(self, queue_url: str, *, client: Any) -> None:  # a boto3 SQS client
        self.queue_url = queue_url
        self._client = client

    def send(self, bodies: Sequence[str]) -> list[int]:
        """Send ``bodies`` (at most ten) in one request; the indexes SQS refused."""
        if len(bodies) > MAX_ENTRIES:
            raise InvalidRequestError(f"{len(bodies)} messages: SQS takes at most ten at once")
        if not bodies:
            return []
        entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies)]
        try:
            answer = self._client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailableError(
                f"the GC shard queue {self.queue_url} did not take {len(bodies)} messages "
                f"({exc}); the next scheduled run sends them again"
            ) from exc
        return sorted(int(failed["Id"]) for failed in answer.get("Failed", []))
