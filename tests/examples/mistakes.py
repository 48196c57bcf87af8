"""Producer mistakes, each made for real and registered: what snapledger answers.

Each ``make_*`` writes a snapshot with ``SnapshotWriter`` into a ``file://`` root and then
spoils it as a hand-rolled producer would; ``register`` runs the registration service on
it. ``python -m tests.examples.mistakes`` prints every answer (what docs/producers.md
quotes).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client import SnapshotWriter, WrittenSnapshot
from snapledger.clock import ManualClock
from snapledger.services.registration import RegistrationResult, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY

STREAM, PARTITION = "orders", 3
ROWS = [("a", b"1"), ("b", b"2"), ("c", b"3")]


class Scene:
    """A ledger, a file:// root holding the writer's files, and the registry's clock."""

    def __init__(self, ledger: Any, root: Path) -> None:
        self.ledger = ledger
        self.root = root
        self.store = FileObjectStore(root)
        self.clock = ManualClock()
        self.writer = SnapshotWriter(f"file://{root}", STREAM, PARTITION)

    def register(self, key: str) -> RegistrationResult:
        return register_manifest(
            key, ledger=self.ledger, store=self.store, clock=self.clock, layouts=NATIVE_ONLY
        )

    def manifest(self, written: WrittenSnapshot) -> dict[str, Any]:
        return json.loads(self.store.get(written.manifest_key))  # type: ignore[no-any-return]

    def rewrite_manifest(self, written: WrittenSnapshot, document: dict[str, Any]) -> None:
        self.store.put(written.manifest_key, json.dumps(document).encode())

    def data_path(self, written: WrittenSnapshot, index: int = 0) -> Path:
        return self.root / written.prefix / written.files[index].path

    def write_parquet_as_kv(self, lsn: int, table: pa.Table) -> WrittenSnapshot:
        """A Parquet file of ``table`` with a correct size and checksum, declared
        kv-parquet (the writer itself would refuse such a table)."""
        with tempfile.TemporaryDirectory() as scratch:
            local = Path(scratch) / "part-00000.parquet"
            pq.write_table(table, local)
            written = self.writer.write_files(lsn=lsn, epoch=1, paths_or_dir=local)
        self.rewrite_manifest(written, self.manifest(written) | {"format": "kv-parquet"})
        return written


def checksum_mismatch(scene: Scene) -> str:
    written = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    path = scene.data_path(written)
    data = bytearray(path.read_bytes())
    data[8] ^= 0xFF  # one byte of the data page: same size, footer intact
    path.write_bytes(bytes(data))
    return written.manifest_key


def wrong_columns(scene: Scene) -> str:
    table = pa.table({"k": ["a"], "v": pa.array([b"1"], pa.binary())})
    return scene.write_parquet_as_kv(100, table).manifest_key


def wrong_type(scene: Scene) -> str:
    table = pa.table(
        {
            "key": ["a"],
            "value": pa.array([b"1"], pa.binary()),
            "lsn": pa.array([100], pa.int32()),
        }
    )
    return scene.write_parquet_as_kv(100, table).manifest_key


def file_missing(scene: Scene) -> str:
    """Also what a manifest written before its data looks like when it arrives."""
    written = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    scene.data_path(written).unlink()
    return written.manifest_key


def wrong_size(scene: Scene) -> str:
    written = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    document = scene.manifest(written)
    document["files"][0]["size"] += 1
    scene.rewrite_manifest(written, document)
    return written.manifest_key


def dot_dot_path(scene: Scene) -> str:
    written = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    document = scene.manifest(written)
    document["files"][0]["path"] = "../elsewhere/part-00000.parquet"
    scene.rewrite_manifest(written, document)
    return written.manifest_key


def older_epoch(scene: Scene) -> str:
    first = scene.writer.write(lsn=100, epoch=5, data=ROWS)
    scene.register(first.manifest_key)
    return scene.writer.write(lsn=200, epoch=4, data=ROWS).manifest_key


def same_lsn_new_id(scene: Scene) -> str:
    first = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    scene.register(first.manifest_key)
    return scene.writer.write(lsn=100, epoch=1, data=[("z", b"other")]).manifest_key


def same_id_other_content(scene: Scene) -> str:
    written = scene.writer.write(lsn=100, epoch=1, data=ROWS)
    scene.register(written.manifest_key)
    scene.rewrite_manifest(written, scene.manifest(written) | {"epoch": 2})
    return written.manifest_key


#: mistake → how to make it, the outcome, and a stable fragment of the reason.
MISTAKES: dict[str, tuple[Callable[[Scene], str], str, str | None]] = {
    "checksum mismatch": (checksum_mismatch, "rejected", "crc32c"),
    "wrong columns": (wrong_columns, "rejected", "missing column 'key'"),
    "wrong type": (wrong_type, "rejected", "column 'lsn' is INT32"),
    "file missing": (file_missing, "rejected", "is not in the store"),
    "wrong size": (wrong_size, "rejected", "but the manifest says"),
    "dot-dot path": (dot_dot_path, "rejected", "'.' and '..' segments are not allowed"),
    "older epoch": (older_epoch, "fenced", "epoch 4 is below"),
    "same LSN, new id": (same_lsn_new_id, "recorded", None),
    "same id, other content": (same_id_other_content, "conflict", "other content"),
}


def run(ledger: Any, root: Path, mistake: str) -> RegistrationResult:
    scene = Scene(ledger, root)
    make, _, _ = MISTAKES[mistake]
    return scene.register(make(scene))


def opaque_base_message(root: Path) -> str:
    """What a restore/compaction job says when its base is an opaque snapshot."""
    from jobs.errors import SnapshotError
    from jobs.snapshots import load_base

    writer = SnapshotWriter(f"file://{root}", STREAM, PARTITION)
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "CURRENT").write_bytes(b"MANIFEST-000001\n")
        written = writer.write_files(lsn=100, epoch=1, paths_or_dir=scratch)
    try:
        load_base(_JobStoreView(FileObjectStore(root)), STREAM, PARTITION, written.prefix)
    except SnapshotError as exc:
        return str(exc)
    raise AssertionError("the job accepted an opaque base")


def opaque_restore_refusal(ledger: Any, root: Path) -> dict[str, Any]:
    """What the launch function answers to a restore whose base (the latest) is opaque.
    Needs the Powertools variables of the functions set (see tests/functions/support.py)."""
    from snapledger.client import RequestRefusedError, Snapledger
    from snapledger.local.handlers import invoke
    from snapledger.runtime import runtime_override
    from tests.support import make_runtime

    scene = Scene(ledger, root)
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "CURRENT").write_bytes(b"MANIFEST-000001\n")
        written = scene.writer.write_files(lsn=100, epoch=1, paths_or_dir=scratch)
    scene.register(written.manifest_key)
    registry = Snapledger(_InProcess(invoke))
    with runtime_override(make_runtime(ledger, scene.store, scene.clock)):
        try:
            registry.restore(STREAM, PARTITION)
        except RequestRefusedError as refused:
            return refused.answer
    raise AssertionError("the launch function accepted an opaque base")


class _InProcess:
    def __init__(self, invoke: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        self._invoke = invoke

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self._invoke(function, payload)


class _JobStoreView:
    """The two calls of the job's ObjectStore that ``load_base`` makes before it checks
    the format, on a FileObjectStore (the job's own store needs a SparkSession)."""

    def __init__(self, store: FileObjectStore) -> None:
        self._store = store

    def list_files(self, prefix: str) -> list[Any]:
        return list(self._store.list(prefix))

    def read_bytes(self, key: str) -> bytes:
        return self._store.get(key)


if __name__ == "__main__":
    from tests.support import moto_ledger

    for name in MISTAKES:
        with moto_ledger() as ledger, tempfile.TemporaryDirectory() as folder:
            result = run(ledger, Path(folder) / "root", name)
            print(f"## {name}: {result.outcome.value}\n{result.reason}\n")
    import os

    from tests.functions.support import POWERTOOLS_ENV

    os.environ.update(POWERTOOLS_ENV)
    with moto_ledger() as ledger, tempfile.TemporaryDirectory() as folder:
        answer = opaque_restore_refusal(ledger, Path(folder) / "root")
        print(f"## opaque restore (launch)\n{answer}\n")
    with tempfile.TemporaryDirectory() as folder:
        print(f"## opaque base\n{opaque_base_message(Path(folder) / 'root')}")
