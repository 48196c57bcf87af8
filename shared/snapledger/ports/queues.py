"""Queue ports: the shards a coordinating GC run sends out, and the manifests queued for
registration (SQS in AWS)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class ShardQueue(Protocol):
    """Where a coordinating GC run sends shards of lineages (an SQS queue)."""

    def send(self, bodies: Sequence[str]) -> list[int]:
        """Send up to ten message bodies in one request; the indexes of the ones refused."""
        ...


@dataclass(frozen=True, slots=True)
class QueuedManifest:
    """One message: the manifest key (the body), its lineage (group) and its dedup id."""

    key: str
    group_id: str
    deduplication_id: str


class RegistrationQueue(Protocol):
    def send(self, messages: Sequence[QueuedManifest]) -> None:
        """Send every message, or raise ``StoreUnavailableError`` naming the ones not sent."""
        ...
