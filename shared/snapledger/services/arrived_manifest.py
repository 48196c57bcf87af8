"""An arrived manifest (any layout's: ``_manifest.json``, Restate's ``metadata.json``,
Fluss's ``_METADATA``) read for registration: its bytes, or the command that records why
there are none to check."""

from __future__ import annotations

from snapledger.core.manifest_rules import oversize_reason
from snapledger.errors import ManifestTooLargeError, NotFoundError
from snapledger.limits import MAX_MANIFEST_BYTES
from snapledger.models.commands import ArrivedManifest, RegisterSnapshot
from snapledger.ports import ObjectStore


def read_arrived(store: ObjectStore, common: ArrivedManifest) -> bytes | RegisterSnapshot:
    """The manifest's bytes (at most ``MAX_MANIFEST_BYTES``: one GET); a command when it was
    gone (``manifest_missing``) or too large (REJECTED saying so; one HEAD for its size)."""
    key = common["manifest_key"]
    try:
        return store.get(key, max_bytes=MAX_MANIFEST_BYTES)
    except NotFoundError:
        return RegisterSnapshot(**common, manifest_digest="missing", manifest_missing=True)
    except ManifestTooLargeError:
        info = store.head(key)  # only on this rare path: the size, for the message
        size = info.size if info else MAX_MANIFEST_BYTES + 1
        return RegisterSnapshot(
            **common, manifest_digest=f"oversize:{size}", rejection=oversize_reason(size)
        )
