"""Test helpers for the data plane: write changelogs and snapshots with pyarrow, replay
them with a plain-Python oracle, read and check what a job wrote."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from snapledger.ids import new_ulid
from snapledger.layout import segment_key, snapshot_prefix
from snapledger.models.manifest import ManifestV1

CHANGELOG_ARROW = pa.schema(
    [
        ("key", pa.string()),
        ("value", pa.binary()),
        ("lsn", pa.int64()),
        ("op", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
STATE_ARROW = pa.schema([("key", pa.string()), ("value", pa.binary()), ("lsn", pa.int64())])


@dataclass(frozen=True)
class Record:
    key: str | None
    value: bytes | None
    lsn: int | None
    op: str | None


State = dict[str, tuple[bytes | None, int]]  # key -> (value, lsn)


def oracle(
    records: Iterable[Record], upto: int, base: State | None = None, after: int = -1
) -> State:
    """Replay in LSN order: the state after every record with after < lsn <= upto."""
    state = dict(base or {})
    for record in sorted(records, key=lambda r: r.lsn or 0):
        assert record.lsn is not None and record.key is not None
        if not after < record.lsn <= upto:
            continue
        if record.op == "put":
            state[record.key] = (record.value, record.lsn)
        else:
            state.pop(record.key, None)
    return state


def write_segment(
    root: Path, stream: str, partition: int, first: int, last: int, records: Sequence[Record]
) -> str:
    key = segment_key(stream, partition, first, last)
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    table = pa.table(
        {
            "key": [r.key for r in records],
            "value": [r.value for r in records],
            "lsn": [r.lsn for r in records],
            "op": [r.op for r in records],
            "ts": [ts] * len(records),
        },
        schema=CHANGELOG_ARROW,
    )
    pq.write_table(table, path)
    return key


def write_changelog(
    root: Path, stream: str, partition: int, records: Sequence[Record], segment_rows: int
) -> list[str]:
    """Records (dense LSNs from 0) cut into segments of ``segment_rows``."""
    keys = []
    for start in range(0, len(records), segment_rows):
        chunk = records[start : start + segment_rows]
        keys.append(write_segment(root, stream, partition, chunk[0].lsn, chunk[-1].lsn, chunk))
    return keys


def write_processor_snapshot(
    root: Path, stream: str, partition: int, lsn: int, state: State, *, file_rows: int = 0
) -> str:
    """A snapshot as a stream processor would write it: its files (one, or ``file_rows``
    rows per file after a first file of one row), then its manifest."""
    snapshot_id = new_ulid()
    prefix = snapshot_prefix(stream, partition, lsn, snapshot_id)
    folder = root / prefix
    folder.mkdir(parents=True)
    rows = sorted(state.items())
    starts = [0, *range(1, len(rows), file_rows)] if file_rows and len(rows) > 1 else [0]
    files = []
    for index, (start, end) in enumerate(zip(starts, [*starts[1:], len(rows)], strict=True)):
        chunk = rows[start:end]
        table = pa.table(
            {
                "key": [k for k, _ in chunk],
                "value": [v for _, (v, _) in chunk],
                "lsn": [n for _, (_, n) in chunk],
            },
            schema=STATE_ARROW,
        )
        name = f"part-{index:05d}.parquet"
        pq.write_table(table, folder / name)
        size = (folder / name).stat().st_size
        files.append({"path": name, "size": size, "rows": len(chunk)})
    manifest = {
        "format_version": 1,
        "stream": stream,
        "partition": partition,
        "lsn": lsn,
        "snapshot_id": snapshot_id,
        "epoch": 1,
        "producer": {"name": "test-processor"},
        "source": {"kind": "processor"},
        "files": files,
        "row_count": len(rows),
    }
    ManifestV1.model_validate(manifest)
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    return prefix


def read_state(root: Path, prefix: str) -> State:
    """The rows under a job's output prefix, checking each file is sorted and keys unique."""
    state: State = {}
    keys_in_order: list[str] = []
    for path in sorted((root / prefix).glob("part-*.parquet")):
        table = pq.read_table(path)
        assert table.schema.names == ["key", "value", "lsn"]
        for row in table.to_pylist():
            keys_in_order.append(row["key"])
            state[row["key"]] = (row["value"], row["lsn"])
    assert keys_in_order == sorted(keys_in_order), "data files are not sorted by key"
    assert len(keys_in_order) == len(state), "a key appears twice"
    return state


def check_descriptor_files(root: Path, prefix: str, descriptor_name: str) -> dict[str, object]:
    """The descriptor lists exactly the files in the prefix, with true sizes and checksums."""
    folder = root / prefix
    descriptor = json.loads((folder / descriptor_name).read_text())
    listed = {f["path"]: f for f in descriptor["files"]}
    present = {p.name for p in folder.iterdir()} - {descriptor_name}
    assert set(listed) == present, f"{prefix}: files {present} but descriptor lists {set(listed)}"
    for name, entry in listed.items():
        data = (folder / name).read_bytes()
        assert entry["size"] == len(data)
        assert entry["checksum"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert entry["rows"] == pq.ParquetFile(folder / name).metadata.num_rows
    assert descriptor["row_count"] == sum(f["rows"] for f in descriptor["files"])
    return descriptor


def check_manifest(root: Path, prefix: str) -> ManifestV1:
    check_descriptor_files(root, prefix, "_manifest.json")
    return ManifestV1.model_validate_json((root / prefix / "_manifest.json").read_text())


def pythons_older_than(version: tuple[int, int]) -> dict[str, str]:
    """Pythons 3.7+ on this machine older than ``version`` (a 3.x): "3.9" -> its path.

    Looks on PATH and in pyenv's versions (whose shims answer only for the selected one),
    and keeps each one that runs and says it is that version.
    """
    assert version[0] == 3
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found: dict[str, str] = {}
    for minor in range(7, version[1]):
        name = f"3.{minor}"
        places = [shutil.which(f"python{name}")]
        places += [str(p) for p in sorted(pyenv.glob(f"{name}.*/bin/python{name}"))]
        for place in filter(None, places):
            said = subprocess.run(
                [place, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=False,
            )
            if said.returncode == 0 and said.stdout.strip() == name:
                found[name] = place
                break
    return found
