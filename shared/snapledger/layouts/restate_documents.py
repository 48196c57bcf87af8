"""What Restate's JSON documents (``metadata.json``, ``latest.json``) share: their field
types and bounds, the strict model base that keeps unknown fields, RFC 3339 timestamps, and
loading raw bytes within snapledger's size and depth bounds. Pure.
"""

import json
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from snapledger.core.manifest_rules import ManifestRejectedError, json_depth
from snapledger.core.problems import join_problems
from snapledger.layouts.restate_keys import SNAPSHOT_ID_PATTERN, snapshot_path
from snapledger.limits import (
    MAX_COUNT,
    MAX_INT64,
    MAX_JSON_DEPTH,
    MAX_LSN,
    MAX_MANIFEST_BYTES,
    MAX_PARTITION,
    MAX_UINT64,
)

_TIMESTAMP_RE = re.compile(
    r"(?P<second>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?P<fraction>\.[0-9]{1,9})?(?P<zone>Z|[+-][0-9]{2}:[0-9]{2})"
)


def parse_timestamp(text: str) -> datetime:
    """A Restate ``created_at`` (RFC 3339, e.g. ``2026-11-26T20:47:51.439Z``, up to
    nanoseconds) as an aware datetime (to the microsecond). Raises ValueError otherwise."""
    match = _TIMESTAMP_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:64]!r} is not a timestamp like 2026-11-26T20:47:51.439Z")
    fraction = (match["fraction"] or "")[:7]
    zone = "+00:00" if match["zone"] == "Z" else match["zone"]
    return datetime.fromisoformat(match["second"] + fraction + zone)


def _timestamp(text: str) -> str:
    parse_timestamp(text)
    return text


def _text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)") from None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("control characters are not allowed")
    return value


Text = Annotated[str, Field(max_length=1024), AfterValidator(_text)]
Timestamp = Annotated[str, AfterValidator(_timestamp)]
SnapshotId = Annotated[str, Field(pattern=rf"^{SNAPSHOT_ID_PATTERN}$")]
Lsn = Annotated[int, Field(ge=0, le=MAX_LSN)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Partition = Annotated[int, Field(ge=0, le=MAX_PARTITION)]
LogId = Annotated[int, Field(ge=0, le=MAX_INT64)]
Uint64 = Annotated[int, Field(ge=0, le=MAX_UINT64)]
#: Restate's ``ClusterFingerprint`` is a non-zero u64; snapshots of old versions have none.
Fingerprint = Annotated[int, Field(ge=1, le=MAX_UINT64)]
Hex = Annotated[str, Field(pattern=r"^[0-9A-Fa-f]*$")]


class RestateDocument(BaseModel):
    """Frozen; strict about the types of the fields it names (as Restate's serde is), and
    keeps the fields it does not know (a newer Restate may add some)."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True, defer_build=True)


def check_path(path: str, lsn: int, snapshot_id: str) -> None:
    expected = snapshot_path(lsn, snapshot_id)
    if path != expected:
        raise ValueError(
            f"path {path[:128]!r} is not the folder of snapshot {snapshot_id} at LSN {lsn} "
            f"({expected!r})"
        )


def load_json(raw: bytes, what: str) -> Any:
    """``raw`` as JSON, within the size and depth bounds, else ManifestRejectedError."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestRejectedError(
            f"{what} is {len(raw):,} bytes, over the {MAX_MANIFEST_BYTES:,}-byte limit "
            "(docs/limits.md): a partition store of this many SST files is beyond what "
            "snapledger registers; compact it into fewer, larger files"
        )
    too_deep = False
    try:
        document = json.loads(raw)
    except RecursionError:  # nested too deep for the parser: refused just below
        document, too_deep = None, True
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a 4,300-digit integer
        if "integer string conversion" in str(exc):
            raise ManifestRejectedError(
                f"{what} holds an integer of thousands of digits: Restate's numbers are at "
                f"most {MAX_UINT64:,} (docs/limits.md)"
            ) from None
        raise ManifestRejectedError(
            f"{what} is not valid UTF-8 JSON ({str(exc)[:200]}): Restate writes it whole, so "
            "it was truncated or edited by hand; Restate cannot restore from it either"
        ) from None
    if too_deep or json_depth(document) > MAX_JSON_DEPTH:
        raise ManifestRejectedError(
            f"{what}'s JSON nests deeper than {MAX_JSON_DEPTH} levels (Restate's nests 3): "
            "it is not a file Restate wrote"
        )
    return document


def describe(exc: ValidationError) -> str:
    return join_problems(
        [
            f"{'.'.join(str(part) for part in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        ]
    )
