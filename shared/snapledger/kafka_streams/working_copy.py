"""The working copies the Kafka Streams snapshotter keeps between passes (docs/kafka-streams.md,
"Incremental snapshots"): each partition's caught-up store folder stays where the pass left it,
so the next pass continues it instead of downloading the snapshot it wrote itself.

A copy is trusted only with its record, ``{keep_dir}/{application}/{task}/snapledger-copy.json``
(beside the store folder, never uploaded): the snapshot it holds (its id) and that snapshot's
SSTs by name with their registered sizes and checksums, and every local file's size and
modification time when the record was made. A pass continues the copy only when the ledger's
latest is that snapshot, the latest's manifest lists those same SSTs, and the folder holds
exactly the files recorded, each with its recorded size and modification time; anything
else (another latest, a file changed, added or removed, no record) is reported and the copy is
replaced by a download with every checksum checked. The record is removed before a catch-up
changes the folder and written again only once the pass is done, so a pass that crashed or
failed anywhere between leaves no record: the next pass downloads. A lock file
(``{keep_dir}/.lock``, ``flock``) lets one pass at a time use the folder.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from snapledger.errors import InvalidRequestError
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.models.manifest import ManifestReference

#: The record beside each kept store folder (in its task folder, outside what is uploaded).
RECORD = "snapledger-copy.json"
LOCK = ".lock"
#: The folder of a work dir (``--work-dir``) where the copies are kept.
KEPT = "working-copies"


def kept_under(work_dir: Path) -> Path:
    """Where the copies are kept in ``work_dir``."""
    return work_dir / KEPT


class WorkingCopies:
    """The kept store folders of ``application_id``'s store ``store`` under ``root`` (the
    seeder's state dir: ``{root}/{application}/{0_p}/rocksdb/{store}``)."""

    def __init__(self, root: Path, application_id: str, store: str) -> None:
        self.root, self.application_id, self.store = root, application_id, store

    def store_dir(self, partition: int) -> Path:
        return self._task_dir(partition) / "rocksdb" / self.store

    def _task_dir(self, partition: int) -> Path:
        # The task's name only: no task runs here (the seeder wants a task folder).
        return self.root / self.application_id / str(TaskId(0, partition))

    def _record(self, partition: int) -> Path:
        return self._task_dir(partition) / RECORD

    def problem(
        self, partition: int, snapshot_id: str, ssts: Mapping[str, ManifestReference]
    ) -> str | None:
        """Why partition's copy cannot stand for snapshot ``snapshot_id`` whose SSTs are
        ``ssts``; None: it can (continue it, nothing downloaded)."""
        try:
            record = json.loads(self._record(partition).read_text())
        except FileNotFoundError:
            return "no working copy recorded"
        except (OSError, ValueError) as exc:
            return f"its record does not read ({exc})"
        if record.get("snapshot_id") != snapshot_id:
            return f"the working copy holds {record.get('snapshot_id')}, not the latest"
        if record.get("ssts") != _ssts_json(ssts):
            return "the working copy's SSTs are not the latest's as registered"
        return _difference(record.get("files") or {}, _stats(self.store_dir(partition)))

    def release(self, partition: int) -> None:
        """The copy is about to change: its record goes first."""
        self._record(partition).unlink(missing_ok=True)

    def discard(self, partition: int) -> None:
        """No record, no folder: the partition starts from a download or from empty."""
        self.release(partition)
        shutil.rmtree(self.store_dir(partition), ignore_errors=True)

    def keep(self, partition: int, snapshot_id: str, ssts: Mapping[str, ManifestReference]) -> None:
        """Record partition's folder, as it is now, as snapshot ``snapshot_id``'s store."""
        fields = {
            "snapshot_id": snapshot_id,
            "ssts": _ssts_json(ssts),
            "files": _stats(self.store_dir(partition)),
        }
        path = self._record(partition)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(fields, sort_keys=True))
        os.replace(partial, path)


@contextmanager
def working_copies(root: Path, application_id: str, store: str) -> Iterator[WorkingCopies]:
    """``root``'s copies, locked for one pass: another pass on the same folder is refused."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise InvalidRequestError(
                f"another snapshot pass is using the working copies in {root}: run one "
                "snapshotter per --work-dir (or give each its own)"
            ) from None
        try:
            yield WorkingCopies(root, application_id, store)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _difference(recorded: dict[str, list[int]], found: dict[str, list[int]]) -> str | None:
    """The first file that is not as recorded, said; None: every one is."""
    for name in sorted(set(recorded) | set(found)):
        if name not in found:
            return f"{name} is missing from the working copy"
        if name not in recorded:
            return f"{name} is in the working copy but was not recorded"
        if found[name] != recorded[name]:
            return f"{name} was changed since it was recorded (size or modification time)"
    return None


def _ssts_json(ssts: Mapping[str, ManifestReference]) -> dict[str, Any]:
    return {
        name: {"path": ref.path, "size": ref.size, "checksum": ref.checksum}
        for name, ref in sorted(ssts.items())
    }


def _stats(folder: Path) -> dict[str, list[int]]:
    """Every regular file under ``folder`` (relative path -> [size, mtime_ns])."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            found[path.relative_to(folder).as_posix()] = [stat.st_size, stat.st_mtime_ns]
    return found
