"""ULIDs for snapshot ids, stdlib only.

A copy of ``snapledger.ids.new_ulid``: the job ships as a ``--py-files`` zip without
the snapledger package, so it carries its own (tests/jobs checks the two agree).
"""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid(now_ms: int | None = None) -> str:
    """A new ULID: 48 bits of milliseconds since the epoch, then 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))
