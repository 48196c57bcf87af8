"""SnapshotReader: opening snapshots and restores, and refusing files that are not as stated."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from snapledger.client import (
    OpenedSnapshot,
    SnapshotCorruptError,
    SnapshotFormatError,
    SnapshotReader,
    SnapshotWriter,
)
from snapledger.client.state_table import STATE_ARROW_SCHEMA
from snapledger.client.storage import file_checksum
from snapledger.errors import InvalidKeyError, NotFoundError
from snapledger.ids import new_ulid
from snapledger.layout import MANIFEST_NAME, snapshot_prefix
from snapledger.models.manifest import ManifestReference
from tests.client.conftest import Backend

STREAM, PARTITION = "orders", 3
STATE = {"a": b"1" * 50, "b": None, "c": b"3" * 70, "d": b"4"}


def _write(backend: Backend, **options: Any) -> Any:
    writer = SnapshotWriter(backend.root, STREAM, PARTITION, s3_client=backend.client, **options)
    return writer.write(20, 1, STATE, offsets={"orders-3": 99})


def _open(backend: Backend, prefix: str) -> OpenedSnapshot:
    return SnapshotReader(backend.root, s3_client=backend.client).open(prefix)


def _flip_a_byte(backend: Backend, key: str) -> bytes:
    """Corrupt the object at ``key`` without changing its size; returns the new bytes."""
    data = bytearray(backend.read(key))
    data[len(data) // 2] ^= 0xFF
    backend.overwrite(key, bytes(data))
    return bytes(data)


# -- open -------------------------------------------------------------------------------


def test_open_reads_the_manifest_by_prefix_or_manifest_key(backend: Backend):
    written = _write(backend)
    for name in (written.prefix, written.prefix.rstrip("/"), written.manifest_key):
        opened = _open(backend, name)
        assert opened.kind == "snapshot"
        assert opened.prefix == written.prefix
        assert (opened.lsn, opened.snapshot_id) == (20, written.snapshot_id)
        assert opened.offsets == {"orders-3": 99}
        assert opened.format == "kv-parquet"
        assert opened.files == written.files
        assert opened.row_count == 4
        assert (opened.stream, opened.partition) == (STREAM, PARTITION)


def test_open_of_a_snapshot_without_manifest_is_not_found(file_backend: Backend):
    prefix = snapshot_prefix(STREAM, PARTITION, 5, new_ulid())
    with pytest.raises(NotFoundError, match=r"has no _manifest\.json"):
        _open(file_backend, prefix)


def test_open_refuses_a_prefix_outside_the_layout(file_backend: Backend):
    with pytest.raises(InvalidKeyError, match="snapshot layout"):
        _open(file_backend, "snapshots/orders/x/")


def test_open_refuses_an_unreadable_manifest(file_backend: Backend):
    prefix = snapshot_prefix(STREAM, PARTITION, 5, new_ulid())
    file_backend.store().put_if_absent(prefix + MANIFEST_NAME, b'{"format_version": 1}')
    with pytest.raises(SnapshotCorruptError, match="not a valid manifest v1"):
        _open(file_backend, prefix)


def test_open_refuses_a_manifest_that_names_another_snapshot(file_backend: Backend):
    written = _write(file_backend)
    elsewhere = snapshot_prefix(STREAM, PARTITION, 21, new_ulid())
    file_backend.store().put_if_absent(
        elsewhere + MANIFEST_NAME, file_backend.read(written.manifest_key)
    )
    with pytest.raises(SnapshotCorruptError, match="names another snapshot"):
        _open(file_backend, elsewhere)


# -- verify -----------------------------------------------------------------------------


def test_verify_passes_an_intact_snapshot(backend: Backend):
    _open(backend, _write(backend, target_file_rows=2).prefix).verify()


def test_a_corrupted_file_of_the_same_size_fails_verify_naming_both_checksums(backend: Backend):
    written = _write(backend, target_file_rows=2)
    entry = written.files[1]
    corrupted = _flip_a_byte(backend, written.prefix + entry.path)
    with pytest.raises(SnapshotCorruptError) as raised:
        _open(backend, written.prefix).verify()
    [problem] = raised.value.problems
    assert (problem.path, problem.kind) == (entry.path, "checksum")
    assert problem.expected == entry.checksum
    assert problem.actual == file_checksum(corrupted, "crc32c")
    message = str(raised.value)
    assert entry.path in message
    assert entry.checksum in message
    assert problem.actual in message


def test_verify_names_every_corrupted_file(file_backend: Backend):
    written = _write(file_backend, target_file_rows=1, checksum="sha256")
    for entry in written.files[:2]:
        _flip_a_byte(file_backend, written.prefix + entry.path)
    with pytest.raises(SnapshotCorruptError) as raised:
        _open(file_backend, written.prefix).verify()
    assert [p.path for p in raised.value.problems] == [f.path for f in written.files[:2]]


def test_a_missing_file_or_another_size_fails_verify_from_the_listing(backend: Backend):
    written = _write(backend, target_file_rows=2)
    first, second = written.files
    backend.overwrite(written.prefix + first.path, b"short")
    if backend.client is not None:
        backend.client.delete_object(
            Bucket="snapledger-client-test", Key=backend.raw_key(written.prefix + second.path)
        )
    else:
        (backend.directory / written.prefix / second.path).unlink()
    opened = _open(backend, written.prefix)
    with pytest.raises(SnapshotCorruptError) as raised:
        opened.verify()
    assert [(p.path, p.kind, p.expected, p.actual) for p in raised.value.problems] == [
        (first.path, "size", f"{first.size} bytes", "5 bytes"),
        (second.path, "missing", f"{second.size} bytes", None),
    ]


# -- to_arrow ---------------------------------------------------------------------------


def test_to_arrow_refuses_a_corrupted_file(backend: Backend):
    written = _write(backend)
    _flip_a_byte(backend, written.prefix + written.files[0].path)
    with pytest.raises(SnapshotCorruptError, match="checksum"):
        _open(backend, written.prefix).to_arrow()


def test_to_arrow_reads_the_state(backend: Backend):
    table = _open(backend, _write(backend, target_file_rows=3).prefix).to_arrow()
    assert table.schema == STATE_ARROW_SCHEMA
    assert {r["key"]: r["value"] for r in table.to_pylist()} == STATE


# -- download ---------------------------------------------------------------------------


def test_download_copies_every_file_checked(backend: Backend, tmp_path):
    written = _write(backend, target_file_rows=2)
    dest = _open(backend, written.prefix).download(tmp_path / "out")
    assert sorted(p.name for p in dest.iterdir()) == [f.path for f in written.files]
    for entry in written.files:
        assert (dest / entry.path).read_bytes() == backend.read(written.prefix + entry.path)


def test_download_never_leaves_a_corrupted_file_in_place(backend: Backend, tmp_path):
    written = _write(backend)
    [entry] = written.files
    _flip_a_byte(backend, written.prefix + entry.path)
    with pytest.raises(SnapshotCorruptError, match=entry.path):
        _open(backend, written.prefix).download(tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_download_refuses_a_path_that_would_leave_the_destination(file_backend, tmp_path):
    prefix = snapshot_prefix(STREAM, PARTITION, 5, new_ulid())
    manifest = {
        "format_version": 1,
        "stream": STREAM,
        "partition": PARTITION,
        "lsn": 5,
        "snapshot_id": prefix.rstrip("/").rsplit("-", 1)[1],
        "epoch": 0,
        "producer": {"name": "evil"},
        "source": {"kind": "processor"},
        "format": "opaque",
        "files": [{"path": "../../escaped", "size": 1}],
    }
    file_backend.store().put_if_absent(prefix + MANIFEST_NAME, json.dumps(manifest).encode())
    with pytest.raises(SnapshotCorruptError, match="not a safe path"):
        _open(file_backend, prefix).download(tmp_path / "a" / "b")
    assert not (tmp_path / "escaped").exists()


# -- opaque -----------------------------------------------------------------------------


def test_an_opaque_snapshot_downloads_as_written_and_is_refused_as_arrow(backend, tmp_path):
    source = tmp_path / "checkpoint"
    files = {"CURRENT": b"M-1\n", "000001.sst": os.urandom(5000), "sub/LOG": b"log"}
    for relative, data in files.items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_bytes(data)
    written = SnapshotWriter(backend.root, STREAM, PARTITION, s3_client=backend.client).write_files(
        8, 0, source
    )
    opened = _open(backend, written.prefix)
    assert opened.format == "opaque"
    assert opened.row_count is None
    opened.verify()
    dest = opened.download(tmp_path / "restored")
    assert {
        p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()
    } == files
    with pytest.raises(SnapshotFormatError, match=r"'opaque'.*download"):
        opened.to_arrow()


def test_a_snapshot_reusing_its_bases_files_downloads_them_from_where_they_live(backend, tmp_path):
    # Given an opaque snapshot, and a later one written with its unchanged SST reused
    source = tmp_path / "store"
    source.mkdir()
    (source / "000001.sst").write_bytes(os.urandom(3000))
    (source / "CURRENT").write_bytes(b"M-1\n")
    writer = SnapshotWriter(backend.root, STREAM, PARTITION, s3_client=backend.client)
    base = writer.write_files(8, 0, source)
    (source / "000002.sst").write_bytes(os.urandom(2000))
    (source / "CURRENT").write_bytes(b"M-2\n")
    (sst,) = [f for f in base.files if f.path == "000001.sst"]
    folder = base.prefix.rstrip("/").rpartition("/")[2]
    reused = {
        "000001.sst": ManifestReference(
            path=f"{folder}/000001.sst", size=sst.size, checksum=sst.checksum
        )
    }
    later = writer.write_files(9, 0, source, reuse=reused)
    # Then it uploaded only what is new, referencing the rest
    assert sorted(f.path for f in later.files) == ["000002.sst", "CURRENT"]
    assert [r.path for r in later.references] == [f"{folder}/000001.sst"]
    # and it downloads whole, every file checked, the reference under its name
    opened = _open(backend, later.prefix)
    opened.verify()
    dest = opened.download(tmp_path / "restored")
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == {
        p.name: p.read_bytes() for p in source.iterdir()
    }
    # When the referenced file is damaged, the download says which
    _flip_a_byte(backend, base.prefix + "000001.sst")
    with pytest.raises(SnapshotCorruptError, match=r"000001\.sst"):
        _open(backend, later.prefix).download(tmp_path / "again")


# -- restores ---------------------------------------------------------------------------


def _restore(backend: Backend, job_id: str, *, lsn: int, base_lsn: int | None) -> Any:
    """A restore folder as the restore job writes it: data files, then _restore.json."""
    written = _write(backend, target_file_rows=3)
    store = backend.store()
    prefix = f"restores/{job_id}/{PARTITION}/"
    for entry in written.files:
        store.put_file(
            prefix + entry.path,
            backend.read(written.prefix + entry.path),
            checksum_algorithm="sha256",
        )
    descriptor = {
        "format_version": 1,
        "job_id": job_id,
        "stream": STREAM,
        "partition": PARTITION,
        "lsn": lsn,
        "base": None
        if base_lsn is None
        else {"snapshot_id": written.snapshot_id, "lsn": base_lsn, "offsets": {"orders-3": 99}},
        "changelog_from_lsn": None,
        "changelog_to_lsn": None,
        "created_at": "2025-01-01T00:00:00.000Z",
        "producer": {"name": "snapledger-jobs", "version": "0.1.0"},
        "files": [
            {
                "path": f.path,
                "size": f.size,
                "rows": f.rows,
                "checksum": file_checksum(backend.read(written.prefix + f.path), "sha256"),
            }
            for f in written.files
        ],
        "row_count": written.row_count,
    }
    store.put_if_absent(prefix + "_restore.json", json.dumps(descriptor).encode())
    return written


def test_open_restore_reads_the_restore_descriptor(backend: Backend):
    _restore(backend, "restore-1", lsn=30, base_lsn=20)
    opened = SnapshotReader(backend.root, s3_client=backend.client).open_restore(
        "restore-1", PARTITION
    )
    assert opened.kind == "restore"
    assert opened.prefix == f"restores/restore-1/{PARTITION}/"
    assert (opened.lsn, opened.snapshot_id, opened.format) == (30, None, "kv-parquet")
    assert opened.offsets is None  # changelog applied after the base: positions unknown
    assert opened.row_count == 4
    opened.verify()
    assert {r["key"]: r["value"] for r in opened.to_arrow().to_pylist()} == STATE


def test_a_restore_at_its_base_s_lsn_carries_the_base_s_offsets(file_backend: Backend):
    _restore(file_backend, "restore-2", lsn=20, base_lsn=20)
    opened = SnapshotReader(file_backend.root).open_restore("restore-2", PARTITION)
    assert opened.offsets == {"orders-3": 99}


def test_a_corrupted_restore_file_fails_verify(file_backend: Backend):
    written = _restore(file_backend, "restore-3", lsn=20, base_lsn=None)
    _flip_a_byte(file_backend, f"restores/restore-3/{PARTITION}/{written.files[0].path}")
    opened = SnapshotReader(file_backend.root).open_restore("restore-3", PARTITION)
    with pytest.raises(SnapshotCorruptError, match=written.files[0].path):
        opened.verify()


def test_a_restore_of_an_empty_state_has_no_file_and_reads_as_an_empty_table(file_backend):
    store = file_backend.store()
    descriptor = {
        "format_version": 1,
        "job_id": "r",
        "stream": STREAM,
        "partition": 0,
        "lsn": 0,
        "files": [],
        "row_count": 0,
        "a_field_of_a_newer_job": True,
    }
    store.put_if_absent("restores/r/0/_restore.json", json.dumps(descriptor).encode())
    table = SnapshotReader(file_backend.root).open_restore("r", 0).to_arrow()
    assert (table.num_rows, table.schema) == (0, STATE_ARROW_SCHEMA)


def test_open_restore_refuses_missing_mismatched_and_malformed(file_backend: Backend):
    reader = SnapshotReader(file_backend.root)
    with pytest.raises(NotFoundError, match=r"has no _restore\.json"):
        reader.open_restore("nope", 0)
    with pytest.raises(ValueError, match="job_id"):
        reader.open_restore("a/b", 0)
    descriptor = {"format_version": 1, "job_id": "other", "stream": STREAM, "partition": 0}
    descriptor |= {"lsn": 0, "files": []}
    file_backend.store().put_if_absent(
        "restores/r/0/_restore.json", json.dumps(descriptor).encode()
    )
    with pytest.raises(SnapshotCorruptError, match="names job 'other'"):
        reader.open_restore("r", 0)
    file_backend.store().put_if_absent("restores/s/0/_restore.json", b"not json")
    with pytest.raises(SnapshotCorruptError, match=r"_restore\.json is not valid"):
        reader.open_restore("s", 0)


def test_a_kv_file_without_the_kv_columns_is_refused_as_arrow(file_backend: Backend, tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": [1]}), path)
    store = file_backend.store()
    stored = store.put_file("restores/x/0/part-00000.parquet", path, checksum_algorithm="md5")
    descriptor = {"format_version": 1, "job_id": "x", "stream": STREAM, "partition": 0, "lsn": 0}
    descriptor |= {"files": [{"path": "part-00000.parquet", "size": stored.size}]}
    store.put_if_absent("restores/x/0/_restore.json", json.dumps(descriptor).encode())
    with pytest.raises(SnapshotCorruptError, match="not a Parquet file of key"):
        SnapshotReader(file_backend.root).open_restore("x", 0).to_arrow()


def test_importing_the_client_package_imports_neither_pyarrow_nor_boto3():
    import subprocess
    import sys

    code = (
        "import sys, snapledger.client as c; "
        "print('pyarrow' in sys.modules, 'boto3' in sys.modules, c.SnapshotCorruptError.__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.cwd()
    )
    assert result.stdout.split() == ["False", "False", "SnapshotCorruptError"]


# -- pointers that cannot be planted (issue 27 row 3) -----------------------------------


def _write_lineage(backend: Backend, stream: str, partition: int, lsn: int) -> Any:
    writer = SnapshotWriter(backend.root, stream, partition, s3_client=backend.client)
    return writer.write(lsn, 1, STATE, offsets={f"{stream}-{partition}": lsn})


def _pointer_of(stream: str, partition: int, written: Any) -> dict[str, Any]:
    """The latest.json snapledger would publish for ``written`` (as its model dumps it)."""
    from snapledger.models.pointer import LatestPointer

    return LatestPointer(
        format_version=1,
        stream=stream,
        partition=partition,
        snapshot_id=written.snapshot_id,
        lsn=written.lsn,
        epoch=written.epoch,
        prefix=written.prefix,
        manifest_key=written.manifest_key,
        format=written.format,
        files=list(written.files),
        row_count=written.row_count,
        registered_at="2026-11-26T00:00:00Z",
        offsets={f"{stream}-{partition}": written.lsn},
    ).model_dump(mode="json")


def _plant(backend: Backend, key: str, document: dict[str, Any] | bytes) -> None:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    backend.overwrite(key, raw) if backend.client is not None else _put_file(backend, key, raw)


def _put_file(backend: Backend, key: str, raw: bytes) -> None:
    assert backend.directory is not None
    (backend.directory / key).parent.mkdir(parents=True, exist_ok=True)
    (backend.directory / key).write_bytes(raw)


LATEST = "snapshots/orders/3/latest.json"


def test_open_latest_follows_its_own_lineage_s_pointer(backend: Backend):
    written = _write_lineage(backend, STREAM, PARTITION, 20)
    _plant(backend, LATEST, _pointer_of(STREAM, PARTITION, written))
    reader = SnapshotReader(backend.root, s3_client=backend.client)
    opened = reader.open_latest(STREAM, PARTITION)
    assert (opened.stream, opened.partition, opened.snapshot_id) == (
        STREAM,
        PARTITION,
        written.snapshot_id,
    )


def test_open_latest_refuses_a_pointer_copied_from_another_lineage(backend: Backend):
    from snapledger.client import PointerRefusedError

    payments = _write_lineage(backend, "payments", 9, 900)
    _plant(backend, LATEST, _pointer_of("payments", 9, payments))  # copied over orders/3's
    reader = SnapshotReader(backend.root, s3_client=backend.client)
    with pytest.raises(PointerRefusedError) as refused:
        reader.open_latest(STREAM, PARTITION)
    message = str(refused.value)
    assert "refused for lineage orders/3" in message  # what was asked
    assert f"names payments/9's snapshot {payments.snapshot_id}" in message  # what it names
    assert "ask the registry for the latest" in message  # what to do
    assert isinstance(refused.value, SnapshotCorruptError)  # caught as before
    with pytest.raises(PointerRefusedError):
        reader.latest_pointer(STREAM, PARTITION)  # its offsets are not handed out either


@pytest.mark.parametrize("field", ["prefix", "manifest_key"])
def test_open_latest_refuses_a_pointer_whose_key_leads_into_another_lineage(
    file_backend: Backend, field: str
):
    from snapledger.client import PointerRefusedError

    mine = _write_lineage(file_backend, STREAM, PARTITION, 20)
    payments = _write_lineage(file_backend, "payments", 9, 900)
    document = _pointer_of(STREAM, PARTITION, mine)
    document[field] = getattr(payments, field)  # stream and partition say orders/3
    _plant(file_backend, LATEST, document)
    with pytest.raises(PointerRefusedError, match=f"its {field} is 'snapshots/payments/9/"):
        SnapshotReader(file_backend.root).open_latest(STREAM, PARTITION)


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [
        (b"\xff\xfe{}", "not a valid latest.json v1"),
        (b"{not json", "not a valid latest.json v1"),
        (b"[" * 300_000, "not a valid latest.json v1"),
        (b'{"lsn": 1' + b"0" * 5000 + b"}", "not a valid latest.json v1"),
        (b" " * (3 * 1024 * 1024), "over the 2,097,152-byte limit of a pointer"),
    ],
    ids=["not_utf8", "not_json", "deep", "huge_int", "oversized"],
)
def test_a_garbage_pointer_is_a_clear_refusal(backend: Backend, garbage: bytes, reason: str):
    from snapledger.client import PointerRefusedError

    _plant(backend, LATEST, garbage)
    reader = SnapshotReader(backend.root, s3_client=backend.client)
    with pytest.raises(PointerRefusedError, match=reason) as refused:
        reader.open_latest(STREAM, PARTITION)
    assert "refused for lineage orders/3" in str(refused.value)


def test_a_pointer_past_the_manifest_s_bound_is_still_read(file_backend: Backend):
    # A pointer lists its snapshot's files as the manifest does: it may pass 1 MiB.
    written = _write_lineage(file_backend, STREAM, PARTITION, 20)
    raw = json.dumps(_pointer_of(STREAM, PARTITION, written)).encode()
    _plant(file_backend, LATEST, raw[:-1] + b" " * (1024 * 1024) + b"}")
    assert SnapshotReader(file_backend.root).latest_pointer(STREAM, PARTITION).lsn == 20


GENERATION = "snapshots/orders/generation.json"


def _generation_of(stream: str, members: dict[int, Any]) -> dict[str, Any]:
    return {
        "format_version": 1,
        "stream": stream,
        "generation": 1,
        "completed_at": "2026-11-26T00:00:00Z",
        "members": [
            {
                "partition": partition,
                "snapshot_id": w.snapshot_id,
                "lsn": w.lsn,
                "epoch": w.epoch,
                "prefix": w.prefix,
                "manifest_key": w.manifest_key,
                "offsets": None,
            }
            for partition, w in sorted(members.items())
        ],
    }


def test_open_generation_follows_its_own_stream_s_pointer(file_backend: Backend):
    members = {p: _write_lineage(file_backend, STREAM, p, 10 + p) for p in (0, 1)}
    _plant(file_backend, GENERATION, _generation_of(STREAM, members))
    opened = SnapshotReader(file_backend.root).open_generation(STREAM)
    assert {p: o.snapshot_id for p, o in opened.items()} == {
        p: w.snapshot_id for p, w in members.items()
    }


@pytest.mark.parametrize("planting", ["other_stream", "member_elsewhere", "garbage"])
def test_open_generation_refuses_a_planted_generation_json(file_backend: Backend, planting):
    from snapledger.client import PointerRefusedError

    payments = {9: _write_lineage(file_backend, "payments", 9, 900)}
    if planting == "other_stream":  # payments' generation.json copied over orders'
        document: dict[str, Any] | bytes = _generation_of("payments", payments)
        reason = "names stream 'payments'"
    elif planting == "member_elsewhere":  # says orders, partition 0, leads to payments/9
        document = _generation_of(STREAM, {0: payments[9]})
        reason = "member 0's prefix is 'snapshots/payments/9/"
    else:
        document, reason = b"[" * 300_000, "not a valid generation.json v1"
    _plant(file_backend, GENERATION, document)
    reader = SnapshotReader(file_backend.root)
    with pytest.raises(PointerRefusedError, match=reason) as refused:
        reader.open_generation(STREAM)
    assert "refused for stream orders" in str(refused.value)
    with pytest.raises(PointerRefusedError):
        reader.generation_pointer(STREAM)
