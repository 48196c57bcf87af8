"""The latest protected in the bucket (``SNAPLEDGER_PROTECT_LATEST``; S3 Object Lock).

Two steps, each idempotent, at the two places that already decide a snapshot's fate:

- **Hold** (``hold_snapshot``): registration puts a legal hold on every file a *valid*
  manifest names, and on the manifest, after validation and **before** the ledger commit.
  So no snapshot can become latest unheld: a crash after the holds and before the commit
  leaves held files and no record, and the redelivered manifest holds them again and
  commits. A snapshot keeps its holds while it is registered, latest or not, until GC
  deletes it. A manifest the ledger then refuses (fenced: its epoch is stale) is held too;
  it is REJECTED, and GC releases its holds when it deletes its files after the grace window.
- **Release** (``release_failure``): GC releases every version under a snapshot's prefix
  once it has decided the snapshot goes (EXPIRING: expired, rejected past the grace
  window, a claimed orphan, objects written again after a deletion) and has sent the
  deletes of all its objects, and **before** it marks it DELETED. A crash before the
  release leaves it EXPIRING, and the next run releases again. Releasing after the deletes
  closes a race a release before them would leave open: a registration that validated
  the prefix just before GC deleted it and holds a file after the release; once a key's
  current version is a delete marker, a hold on it fails, and one that came before the
  release is released by it.

``latest.json`` (``snapshots/{stream}/{partition}/latest.json``) is never held: it is
rewritten (``If-Match``) each time the latest advances, and a held version would stay,
noncurrent and held, for ever.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from snapledger.errors import SnapledgerError
from snapledger.layout import SnapshotLocation
from snapledger.models.manifest import ManifestV1
from snapledger.ports import ObjectHolds

#: PutObjectLegalHold requests in flight at once while holding one snapshot's files.
HOLDERS = 16


def snapshot_keys(location: SnapshotLocation, manifest: ManifestV1) -> list[str]:
    """Every key a snapshot's hold covers: the files its manifest names, then the manifest."""
    return [location.prefix + entry.path for entry in manifest.files] + [location.manifest_key]


def hold_snapshot(holds: ObjectHolds, location: SnapshotLocation, manifest: ManifestV1) -> int:
    """Hold every file of a valid manifest and the manifest itself (one PutObjectLegalHold
    each, ``HOLDERS`` at a time); the number held. Raises if one fails: the registration
    fails, and its redelivery holds them all again before it commits."""
    keys = snapshot_keys(location, manifest)
    with ThreadPoolExecutor(max_workers=min(HOLDERS, len(keys))) as pool:
        list(pool.map(holds.hold, keys))
    return len(keys)


def release_failure(holds: ObjectHolds | None, prefix: str) -> str | None:
    """Release every version under ``prefix`` (a snapshot GC has deleted); why it failed,
    or None (done, or nothing to do when ``holds`` is None: the setting is off)."""
    if holds is None:
        return None
    try:
        holds.release_holds(prefix)
    except SnapledgerError as exc:
        return (
            f"its objects are deleted but their legal holds could not be released ({exc}); "
            "it stays EXPIRING and the next GC run releases them"
        )
    return None
