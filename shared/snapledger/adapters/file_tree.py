"""The folder tree under the file store's root (object_store_file.py), read and written the
way S3 behaves: listings walk it in full-key order, writes land whole through a temp file
beside the key, and deletes prune the folders they empty."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from snapledger.adapters.object_keys import TEMP_PREFIX
from snapledger.errors import InvalidKeyError
from snapledger.ports import ObjectInfo

#: How often a write retries when a concurrent delete removes its (empty) directory.
_WRITE_ATTEMPTS = 5


def walk(directory: Path, base: str, prefix: str, after: str) -> Iterator[ObjectInfo]:
    """Objects below ``directory`` (whose keys start with ``base``) in key order.

    Entries are sorted by ``name + '/'`` for directories and ``name`` for files: that
    is exactly the order of the full keys below them ('a-b' < 'a/x' < 'a0'), and it
    lets whole subtrees before ``after`` or outside ``prefix`` be skipped unread.
    """
    for name, is_dir in sorted_entries(directory):
        key = f"{base}{name}/" if is_dir else f"{base}{name}"
        if not (key.startswith(prefix) or (is_dir and prefix.startswith(key))):
            continue
        if is_dir:
            # Every key in the subtree starts with ``key``; skip it if all are <= after.
            if key < after and not after.startswith(key):
                continue
            yield from walk(directory / name, key, prefix, after)
        elif key > after:
            try:
                stat = (directory / name).stat()
            except FileNotFoundError:
                continue  # deleted since the directory was read
            yield info(key, stat)


def sorted_entries(directory: Path) -> list[tuple[str, bool]]:
    """(name, is_dir) of the folders and regular files in ``directory``, in key order.

    Temp files are left out, and so are symlinks (not followed: a link must not lead a
    listing out of the root) and anything else that is not a plain file or folder.
    """
    entries: list[tuple[str, bool]] = []
    try:
        with os.scandir(directory) as scan:
            for entry in scan:
                if entry.name.startswith(TEMP_PREFIX):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    entries.append((entry.name, True))
                elif entry.is_file(follow_symlinks=False):
                    entries.append((entry.name, False))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(entries, key=lambda entry: entry[0] + "/" if entry[1] else entry[0])


def info(key: str, stat: os.stat_result) -> ObjectInfo:
    return ObjectInfo(
        key=key,
        size=stat.st_size,
        last_modified=datetime.fromtimestamp(stat.st_mtime, tz=UTC),
    )


def write_temp(key: str, path: Path, data: bytes) -> Path:
    """Write ``data`` to a fresh temp file next to ``path`` and return the temp path.

    Next to it, so the final rename or link stays on one file system; and the temp
    file keeps its folder non-empty, so a concurrent delete_many cannot prune the
    folder between this write and that rename.
    """
    attempt = 0
    while True:
        attempt += 1
        temp = path.parent / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Exclusive create: a temp name is never shared with another writer.
            with temp.open("xb") as handle:
                handle.write(data)
            return temp
        except FileNotFoundError:
            # A concurrent delete_many pruned the directory we just made: make it again.
            if attempt >= _WRITE_ATTEMPTS:
                raise
        except (FileExistsError, NotADirectoryError) as exc:
            # mkdir met a file where a directory must be: 'a' exists and 'a/b' is wanted.
            raise shadowed(key) from exc


def prune(root: Path, directories: set[Path]) -> None:
    """Remove now-empty directories, deepest first, up to (not including) ``root``."""
    for deepest in sorted(directories, key=lambda path: len(path.parts), reverse=True):
        directory = deepest
        # Stops at the root, which is not among its own parents.
        while root in directory.parents:
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass  # a concurrent prune got here first; the parents may still be empty
            except OSError:
                break  # not empty, so neither are its ancestors
            directory = directory.parent


def shadowed(key: str) -> InvalidKeyError:
    return InvalidKeyError(
        f"object key {key!r} clashes with another key on the file store: one key cannot be "
        "both an object and a prefix of others (e.g. 'a' and 'a/b'); rename one of them"
    )
