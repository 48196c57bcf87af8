"""The object keys both stores accept (the file store and S3, so a key that works locally
works in AWS and the other way round), and the listing prefixes: relative, '/'-separated,
never escaping the file store's root nor hidden from its listings."""

from __future__ import annotations

from snapledger.errors import InvalidKeyError

#: Name prefix of the file store's in-progress writes; listings skip them and keys may not use it.
TEMP_PREFIX = ".tmp-"


def check_key(key: str) -> str:
    """Return ``key`` if it is a safe relative object key, else raise InvalidKeyError.

    A key is '/'-separated, relative, without empty, '.' or '..' segments, backslashes
    or NUL bytes, and no segment may start with the temp-file prefix. On the file store
    anything else could escape the root or be hidden from listings; S3 applies the same
    rules so that both stores accept exactly the same keys.
    """
    if not key or key.startswith("/") or "\\" in key or "\x00" in key:
        raise InvalidKeyError(
            f"object key {key!r} is not valid: use a non-empty relative key with '/' "
            "separators and no backslashes or NUL bytes"
        )
    for segment in key.split("/"):
        if segment in ("", ".", "..") or segment.startswith(TEMP_PREFIX):
            raise InvalidKeyError(
                f"object key {key!r} is not valid: segments may not be empty, '.' or '..', "
                f"nor start with {TEMP_PREFIX!r}"
            )
    return key


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is a valid listing prefix, else raise InvalidKeyError.

    A prefix is a complete directory part (``a/b/``, checked like a key) followed by an
    optional partial last segment, which is only ever compared, never joined to a path.
    """
    directory, slash, partial = prefix.rpartition("/")
    try:
        if slash:
            check_key(directory)
        if "\\" in partial or "\x00" in partial:
            raise InvalidKeyError("backslash or NUL byte")
    except InvalidKeyError as exc:
        raise InvalidKeyError(
            f"listing prefix {prefix!r} is not valid: use '' or a relative prefix with '/' "
            "separators, no empty, '.' or '..' segments, no backslashes or NUL bytes"
        ) from exc
    return prefix
