"""Legal holds on the objects of an S3 object store (the ``ObjectHolds`` port; the bucket
must have Object Lock enabled): a hold put on an object's current version, and every hold
under a prefix released, version by version."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from snapledger.adapters.object_keys import check_prefix
from snapledger.adapters.s3_location import S3Location, error_code
from snapledger.errors import InvalidRequestError
from snapledger.ports import MAX_KEYS_PER_REQUEST

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: PutObjectLegalHold requests in flight at once when releasing a prefix's versions.
HOLD_RELEASERS = 16
#: S3's answer to a legal hold on a bucket created without Object Lock.
_NO_OBJECT_LOCK = "InvalidRequest"


class S3LegalHolds:
    """The legal holds of the objects at ``location``, through ``client``."""

    def __init__(self, client: S3Client, location: S3Location) -> None:
        self._client = client
        self._at = location

    def hold(self, key: str) -> None:
        """One PutObjectLegalHold (ON) on the object's current version."""
        self._legal_hold(key, None, "ON")

    def release_holds(self, prefix: str) -> int:
        """ListObjectVersions under ``prefix`` (one request per 1,000 versions), then one
        PutObjectLegalHold (OFF) per object version, current or not (delete markers carry
        no hold), ``HOLD_RELEASERS`` at a time: releasing an unheld version is harmless."""
        versions = list(self._versions(prefix))
        if len(versions) <= 1:
            for key, version_id in versions:
                self._legal_hold(key, version_id, "OFF")
        else:
            with ThreadPoolExecutor(max_workers=min(HOLD_RELEASERS, len(versions))) as pool:
                list(pool.map(lambda kv: self._legal_hold(kv[0], kv[1], "OFF"), versions))
        return len(versions)

    def _versions(self, prefix: str) -> Iterator[tuple[str, str]]:
        check_prefix(prefix)
        request: dict[str, Any] = {
            "Bucket": self._at.bucket,
            "Prefix": self._at.prefix + prefix,
            "MaxKeys": MAX_KEYS_PER_REQUEST,
        }
        while True:
            with self._at.translated("list versions", prefix):
                response = self._client.list_object_versions(**request)
            for version in response.get("Versions", []):
                yield self._at.relative(version["Key"]), version["VersionId"]
            if not response.get("IsTruncated"):
                return
            request["KeyMarker"] = response.get("NextKeyMarker")
            request["VersionIdMarker"] = response.get("NextVersionIdMarker")

    def _legal_hold(self, key: str, version_id: str | None, status: str) -> None:
        request: dict[str, Any] = {
            "Bucket": self._at.bucket,
            "Key": self._at.full(key),
            "LegalHold": {"Status": status},
        }
        if version_id is not None:
            request["VersionId"] = version_id
        action = "hold" if status == "ON" else "release the hold of"
        try:
            self._client.put_object_legal_hold(**request)
        except ClientError as exc:
            if error_code(exc) == _NO_OBJECT_LOCK:
                raise InvalidRequestError(
                    f"{action} {key!r} in {self._at.uri}: the bucket has no Object Lock "
                    f"({exc.response.get('Error', {}).get('Message', '')}): protectLatest "
                    "needs a bucket created with Object Lock (docs/deploy.md, 'The latest "
                    "protected in the bucket'); or turn the setting off"
                ) from exc
            raise self._at.error(exc, action, key) from exc
        except BotoCoreError as exc:
            raise self._at.error(exc, action, key) from exc
