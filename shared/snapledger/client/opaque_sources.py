"""The local files an ``opaque`` snapshot is written from (``SnapshotWriter.write_files``):
a directory's regular files with their relative paths, or a list of files under their
names, each path one registration accepts."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from snapledger.adapters.object_keys import check_key
from snapledger.errors import InvalidKeyError, ManifestTooLargeError
from snapledger.layout import path_problem
from snapledger.models.manifest import MAX_MANIFEST_FILES


def opaque_sources(
    paths_or_dir: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> list[tuple[str, Path]]:
    """(path in the snapshot, local file) of each file to write, in path order."""
    if isinstance(paths_or_dir, str | os.PathLike):
        given = Path(paths_or_dir)
        if given.is_dir():
            sources = [(p.relative_to(given).as_posix(), p) for p in _files_under(given)]
        elif given.is_file():
            sources = [(given.name, given)]
        else:
            raise FileNotFoundError(f"{given} is neither a file nor a directory: nothing to write")
        where = str(given)
    else:
        sources = [(Path(p).name, Path(p)) for p in paths_or_dir]
        where = "the list of files"
        for _, path in sources:
            if not path.is_file():
                raise FileNotFoundError(f"{path} is not a file: list only files to write")
    if not sources:
        raise ValueError(f"no files in {where}: an opaque snapshot needs at least one file")
    if len(sources) > MAX_MANIFEST_FILES:
        raise ManifestTooLargeError(
            f"{len(sources):,} files in {where}, over the {MAX_MANIFEST_FILES:,} a manifest "
            "may list: pack them into fewer files"
        )
    _check_snapshot_paths([relative for relative, _ in sources])
    return sorted(sources)


def _files_under(directory: Path) -> Iterator[Path]:
    for folder, subfolders, names in os.walk(directory):
        subfolders.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_file():
                yield path


def _check_snapshot_paths(paths: list[str]) -> None:
    """Each path is one registration accepts (``core.manifest_rules.path_problem``), a valid
    object key, and no two files share one."""
    seen: set[str] = set()
    for path in paths:
        problem = path_problem(path)
        if problem is None:
            try:
                check_key(path)
            except InvalidKeyError as exc:
                problem = str(exc)
        if problem is None and path in seen:
            problem = "two files have this name (pass a directory to keep relative paths)"
        if problem is not None:
            raise ValueError(f"file {path!r} cannot be part of a snapshot: {problem}")
        seen.add(path)
