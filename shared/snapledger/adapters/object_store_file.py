"""The ``file:///dir`` object store: the local runtime's stand-in for S3.

It keeps S3's observable behaviour where callers depend on it: listings in full-key
lexicographic order, ``start_after`` exclusive, whole-object writes that are never seen
half-written, create-if-absent, and batch deletes where absent keys count as deleted.
Key rules (:func:`~snapledger.adapters.object_keys.check_key`) are shared with the S3
adapter, so a key that works locally works in AWS and the other way round; how the folder
tree is walked, written and pruned is file_tree.py. Writes are atomic but not fsynced: the
local runtime trades durability across a power cut for speed.
"""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from stat import S_ISREG

from snapledger.adapters.file_tree import info, prune, shadowed, sorted_entries, walk, write_temp
from snapledger.adapters.object_keys import check_key, check_prefix
from snapledger.core.checksums import Hasher
from snapledger.errors import (
    InvalidRequestError,
    ManifestTooLargeError,
    NotFoundError,
    ObjectExistsError,
    StaleVersionError,
)
from snapledger.ports import MAX_KEYS_PER_REQUEST, DeleteResult, ObjectInfo, chunked

_DIGEST_CHUNK = 8 * 1024 * 1024


class FileObjectStore:
    """An ObjectStore over a local directory; keys are paths relative to ``root``."""

    def __init__(self, root: Path) -> None:
        # Resolved once, so the URI is canonical and key paths are plain joins below it.
        self._root = Path(root).resolve()

    @property
    def uri(self) -> str:
        return self._root.as_uri()

    @property
    def root(self) -> Path:
        return self._root

    # -- reads -----------------------------------------------------------------------

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` in key order, after ``start_after``."""
        check_prefix(prefix)
        directory, _, _ = prefix.rpartition("/")
        base = directory + "/" if directory else ""
        yield from walk(self._root / directory, base, prefix, start_after or "")

    def list_page(
        self, prefix: str, *, start_after: str | None = None, limit: int = MAX_KEYS_PER_REQUEST
    ) -> builtins.list[ObjectInfo]:  # ``list`` is a method name in this class
        """At most ``limit`` objects after ``start_after`` (the same order as ``list``)."""
        _check_limit(limit)
        return list(itertools.islice(self.list(prefix, start_after=start_after), limit))

    def list_dirs(self, prefix: str) -> Iterator[str]:
        """Immediate sub-prefixes of ``prefix`` that hold at least one object, in order."""
        check_prefix(prefix)
        directory, _, partial = prefix.rpartition("/")
        base = directory + "/" if directory else ""
        for name, is_dir in sorted_entries(self._root / directory):
            sub_prefix = f"{base}{name}/"
            # S3 reports a common prefix only if an object lies below it; an empty
            # directory (a crash between delete and rmdir) is not one.
            if is_dir and name.startswith(partial) and next(self.list(sub_prefix), None):
                yield sub_prefix

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes; NotFoundError if absent, ManifestTooLargeError past max_bytes."""
        path = self._path(key)
        try:
            with path.open("rb") as handle:
                # Size from the open handle, so a concurrent replace cannot slip a bigger
                # file in between the check and the read.
                size = os.fstat(handle.fileno()).st_size
                if max_bytes is not None and size > max_bytes:
                    raise _too_large(key, size, max_bytes)
                data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFoundError(f"object {key!r} does not exist in {self.uri}") from exc
        if max_bytes is not None and len(data) > max_bytes:
            raise _too_large(key, len(data), max_bytes)
        return data

    def head(self, key: str) -> ObjectInfo | None:
        """The object's info, or None if absent."""
        try:
            stat = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not S_ISREG(stat.st_mode):
            return None
        return info(key, stat)

    def get_tail(self, key: str, length: int) -> bytes:
        """The file's last ``length`` bytes."""
        if length <= 0:
            return b""
        try:
            with self._path(key).open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - length))
                return handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFoundError(f"object {key!r} does not exist in {self.uri}") from exc

    def stored_checksum(self, key: str, algorithm: str) -> bytes | None:
        """The store keeps no checksums beside its files: computed from the bytes, for
        every algorithm a manifest may name (what S3 would have stored at upload),
        streamed in 8 MiB reads."""
        hasher = Hasher(algorithm)
        try:
            with self._path(key).open("rb") as handle:
                while chunk := handle.read(_DIGEST_CHUNK):
                    hasher.update(chunk)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFoundError(f"object {key!r} does not exist in {self.uri}") from exc
        return hasher.checksum().digest

    # -- writes ----------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        """Write (overwrite) an object atomically: readers see the old or the new bytes."""
        path = self._path(key)
        temp = write_temp(key, path, data)
        try:
            os.replace(temp, path)
        except IsADirectoryError as exc:
            raise shadowed(key) from exc
        finally:
            temp.unlink(missing_ok=True)

    def create(self, key: str, data: bytes) -> None:
        """Write only if absent; ObjectExistsError otherwise.

        The bytes go to a temp file first and are then hard-linked to the key: link(2)
        fails if the target exists, atomically across threads and processes, and the
        object is complete the moment it becomes visible.
        """
        path = self._path(key)
        temp = write_temp(key, path, data)
        try:
            os.link(temp, path)
        except FileExistsError as exc:
            if path.is_dir():
                raise shadowed(key) from exc
            raise ObjectExistsError(f"object {key!r} already exists in {self.uri}") from exc
        finally:
            temp.unlink(missing_ok=True)

    def get_versioned(self, key: str, *, max_bytes: int | None = None) -> tuple[bytes, str] | None:
        """The bytes and a version tag: the sha256 of the content (S3's ETag of a
        single-part upload is its MD5: content-derived too). None if absent. With
        ``max_bytes``, only the first ``max_bytes + 1`` bytes are kept (the tag is still
        of the whole content, hashed as it streams)."""
        if max_bytes is None:
            try:
                data = self.get(key)
            except NotFoundError:
                return None
            return data, _content_tag(data)
        try:
            handle = self._path(key).open("rb")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        digest = hashlib.sha256()
        kept = bytearray()
        with handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
                if len(kept) <= max_bytes:
                    kept += chunk[: max_bytes + 1 - len(kept)]
        return bytes(kept), '"' + digest.hexdigest() + '"'

    def replace(self, key: str, data: bytes, *, if_match: str) -> None:
        """Overwrite only if the content is still the version ``if_match`` tags.

        The compare and the rename run under an exclusive ``flock`` of the key's folder,
        so two replaces of one key (threads or processes) are serialized and the second
        finds the first's version: StaleVersionError, as S3 answers 412.
        """
        path = self._path(key)
        temp = write_temp(key, path, data)
        try:
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                fcntl.flock(folder, fcntl.LOCK_EX)
                current = self.get_versioned(key)
                if current is None or current[1] != if_match:
                    raise StaleVersionError(
                        f"object {key!r} in {self.uri} is no longer version {if_match}: "
                        "read it again"
                    )
                os.replace(temp, path)
            finally:
                os.close(folder)  # releases the lock
        finally:
            temp.unlink(missing_ok=True)

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        """Delete ``keys`` (absent ones count as deleted) and prune emptied directories.

        Every key is checked before anything is deleted, so a bad key deletes nothing.
        """
        unique = list(dict.fromkeys(check_key(key) for key in keys))
        deleted: list[str] = []
        failed: list[tuple[str, str]] = []
        for batch in chunked(unique, MAX_KEYS_PER_REQUEST):
            parents: set[Path] = set()
            for key in batch:
                path = self._root / key
                try:
                    path.unlink()
                except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                    pass  # no object at this key (a directory is not one): already gone
                except OSError as exc:
                    failed.append((key, f"{type(exc).__name__}: {exc.strerror or exc}"))
                    continue
                deleted.append(key)
                parents.add(path.parent)
            prune(self._root, parents)
        return DeleteResult(deleted=tuple(deleted), failed=tuple(failed))

    # -- helpers ---------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self._root / check_key(key)


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_KEYS_PER_REQUEST:
        raise InvalidRequestError(
            f"listing limit {limit} is out of range: use 1 to {MAX_KEYS_PER_REQUEST}"
        )


def _content_tag(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


def _too_large(key: str, size: int, max_bytes: int) -> ManifestTooLargeError:
    return ManifestTooLargeError(
        f"object {key!r} is {size} bytes, over the {max_bytes}-byte limit: "
        "write a smaller object (split it) or raise the limit"
    )
