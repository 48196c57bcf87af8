"""moto's in-process backends are not thread-safe (a transaction deep-copies a table while
another thread writes it). GC works lineages on several threads, as it does on DynamoDB
and S3, which serialize conflicting requests themselves: here moto's dispatch is made one
request at a time, so a test on moto sees what AWS would, not a race inside the fake."""

from __future__ import annotations

import functools
import threading
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber

_LOCK = threading.RLock()


def serialize_moto_requests() -> None:
    """Make every request moto answers in-process run alone (idempotent)."""
    if getattr(BotocoreStubber.process_request, "serialized", False):
        return
    original = BotocoreStubber.process_request

    @functools.wraps(original)
    def process_request(self: BotocoreStubber, request: Any) -> Any:
        with _LOCK:
            return original(self, request)

    process_request.serialized = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]
