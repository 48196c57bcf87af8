"""snapledger.client.storage: checksums, uploads with S3's checksums, atomic local writes."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from awscrt import checksums as crt
from botocore.exceptions import ClientError

from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.client import blob_store as storage
from snapledger.client.storage import (
    CHUNK_BYTES,
    MIN_PART_SIZE,
    ListedObject,
    file_checksum,
    open_store,
)
from snapledger.core.checksums import ChecksumError, parse_checksum
from snapledger.errors import (
    InvalidRequestError,
    NotFoundError,
    ObjectExistsError,
    StoreUnavailableError,
)
from tests.client.conftest import BUCKET, MIB, S3_PREFIX, Backend

CHECK = b"123456789"  # the CRC catalogue's check input


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


# -- file_checksum -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "digest"),
    [
        ("crc32c", bytes.fromhex("e3069283")),  # CRC-32/ISCSI check value
        ("crc64nvme", bytes.fromhex("ae8b14860a799888")),  # CRC-64/NVME check value
        ("sha256", hashlib.sha256(CHECK).digest()),
        ("md5", hashlib.md5(CHECK).digest()),
    ],
)
def test_file_checksum_is_the_algorithm_s_digest_in_s3_s_base64(algorithm, digest, tmp_path):
    path = tmp_path / "f"
    path.write_bytes(CHECK)
    expected = f"{algorithm}:{_b64(digest)}"
    assert file_checksum(CHECK, algorithm) == expected
    assert file_checksum(path, algorithm) == expected
    assert file_checksum(str(path), algorithm) == expected
    # the spelling core.checksums (registration) reads back to the same bytes
    assert parse_checksum(expected).digest == digest


@pytest.mark.parametrize("algorithm", ["crc32c", "crc64nvme"])
def test_file_checksum_streams_a_file_larger_than_a_chunk(algorithm, tmp_path):
    data = os.urandom(CHUNK_BYTES + 12345)  # two reads: the second continues the first's CRC
    path = tmp_path / "big"
    path.write_bytes(data)
    one_shot = getattr(crt, algorithm)(data).to_bytes(4 if algorithm == "crc32c" else 8, "big")
    assert file_checksum(path, algorithm) == f"{algorithm}:{_b64(one_shot)}"


def test_file_checksum_refuses_an_unknown_algorithm():
    with pytest.raises(ChecksumError, match="crc32"):
        file_checksum(b"x", "crc32")


# -- the same contract on both stores --------------------------------------------------


def test_put_file_returns_size_and_checksum_and_get_reads_it_back(backend: Backend, tmp_path):
    store = backend.store()
    local = tmp_path / "local"
    local.write_bytes(b"hello world")
    stored = store.put_file("a/b.bin", local, checksum_algorithm="crc32c")
    assert stored.size == 11
    assert stored.checksum == file_checksum(b"hello world", "crc32c")
    assert store.get("a/b.bin") == b"hello world"
    assert b"".join(store.iter_chunks("a/b.bin")) == b"hello world"
    assert backend.read("a/b.bin") == b"hello world"  # under the root, not beside it


def test_list_gives_key_and_size_under_the_prefix_only(backend: Backend):
    store = backend.store()
    store.put_file("p/x", b"12", checksum_algorithm="md5")
    store.put_file("p/y/z", b"345", checksum_algorithm="md5")
    store.put_file("q", b"6", checksum_algorithm="md5")
    assert store.list("p/") == [ListedObject("p/x", 2), ListedObject("p/y/z", 3)]


def test_put_if_absent_never_overwrites(backend: Backend):
    store = backend.store()
    store.put_if_absent("m.json", b"first")
    with pytest.raises(ObjectExistsError):
        store.put_if_absent("m.json", b"second")
    assert store.get("m.json") == b"first"


def test_put_file_never_overwrites(backend: Backend):
    store = backend.store()
    store.put_file("d/part.bin", b"first", checksum_algorithm="crc32c")
    with pytest.raises(ObjectExistsError, match=r"'d/part\.bin' .*it was not overwritten"):
        store.put_file("d/part.bin", b"second", checksum_algorithm="crc32c")
    assert store.get("d/part.bin") == b"first"
    assert store.list("d/") == [ListedObject("d/part.bin", 5)]  # no temp file left


def test_download_copies_the_object_with_its_checksum(backend: Backend, tmp_path):
    store = backend.store()
    store.put_file("k", b"payload", checksum_algorithm="sha256")
    stored = store.download("k", tmp_path / "out" / "k", checksum_algorithm="sha256")
    assert (tmp_path / "out" / "k").read_bytes() == b"payload"
    assert stored.size == 7
    assert stored.checksum == file_checksum(b"payload", "sha256")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["k"]  # no temp file left


def test_reading_a_missing_key_is_not_found(backend: Backend, tmp_path):
    store = backend.store()
    with pytest.raises(NotFoundError):
        store.get("nope")
    with pytest.raises(NotFoundError):
        list(store.iter_chunks("nope"))
    with pytest.raises(NotFoundError):
        store.download("nope", tmp_path / "x")
    assert not (tmp_path / "x").exists()


# -- file:// ---------------------------------------------------------------------------


def test_file_put_writes_a_temp_file_and_links_it_into_place(file_backend, monkeypatch):
    """A reader never sees half a file: the bytes go to a '.tmp-' file beside the target
    (which listings skip), complete, before one hard link makes them visible (a link,
    not a rename: it fails if the target exists)."""
    store = file_backend.store()
    data = os.urandom(CHUNK_BYTES + 10)  # written in two chunks
    renames = []
    real_link = os.link

    def spy(source: Any, target: Any) -> None:
        source, target = Path(source), Path(target)
        renames.append((source.name, target.name, target.exists(), source.read_bytes() == data))
        real_link(source, target)

    monkeypatch.setattr(storage.os, "link", spy)
    store.put_file("dir/obj", data, checksum_algorithm="crc32c")
    [(temp_name, target_name, target_existed, complete)] = renames
    assert temp_name.startswith(".tmp-")
    assert (target_name, target_existed, complete) == ("obj", False, True)
    assert sorted(p.name for p in (file_backend.directory / "dir").iterdir()) == ["obj"]


def test_a_failed_file_put_leaves_neither_target_nor_temp(file_backend, tmp_path):
    store = file_backend.store()
    with pytest.raises(FileNotFoundError):
        store.put_file("dir/obj", tmp_path / "does-not-exist", checksum_algorithm="crc32c")
    assert list((file_backend.directory / "dir").iterdir()) == []


# -- s3:// -----------------------------------------------------------------------------


def _checksum_headers(client: Any) -> list[dict[str, str]]:
    """The checksum headers of each request the client sends, as sent (not a trailer)."""
    sent: list[dict[str, str]] = []

    def record(request: Any, **_: Any) -> None:
        sent.append(
            {
                name.lower(): value.decode() if isinstance(value, bytes) else value
                for name, value in request.headers.items()
                if name.lower().startswith("x-amz-checksum-") or name.lower() == "content-md5"
            }
        )

    client.meta.events.register("before-send.s3.*", record)
    return sent


@pytest.mark.parametrize(
    ("algorithm", "field"),
    [
        ("crc32c", "ChecksumCRC32C"),
        ("crc64nvme", "ChecksumCRC64NVME"),
        ("sha256", "ChecksumSHA256"),
    ],
)
def test_s3_put_sends_the_local_checksum_and_s3_stores_it(s3_backend, algorithm, field):
    store = s3_backend.store()
    sent = _checksum_headers(s3_backend.client)
    data = os.urandom(1000)
    stored = store.put_file("obj", data, checksum_algorithm=algorithm)
    digest = stored.checksum.partition(":")[2]
    # sent with the request as a header, for S3 to verify on arrival
    assert sent[-1] == {f"x-amz-checksum-{algorithm}": digest}
    head = s3_backend.client.head_object(
        Bucket=BUCKET, Key=f"{S3_PREFIX}/obj", ChecksumMode="ENABLED"
    )
    assert head[field] == digest
    # and registration's reader of S3's checksums finds the manifest's
    objects = S3ObjectStore(BUCKET, S3_PREFIX, client=s3_backend.client)
    assert objects.stored_checksum("obj", algorithm) == parse_checksum(stored.checksum).digest


def test_s3_put_with_md5_sends_content_md5(s3_backend):
    store = s3_backend.store()
    sent = _checksum_headers(s3_backend.client)
    stored = store.put_file("obj", b"abc", checksum_algorithm="md5")
    assert stored.checksum == f"md5:{_b64(hashlib.md5(b'abc').digest())}"
    assert sent[-1]["content-md5"] == stored.checksum.partition(":")[2]


def _multipart_store(backend: Backend) -> Any:
    return backend.store(multipart_threshold=MIB, part_size=MIN_PART_SIZE)


def _completions(client: Any) -> list[dict[str, Any]]:
    completed: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.s3.CompleteMultipartUpload",
        lambda params, **_: completed.append(dict(params)),
    )
    return completed


def test_s3_multipart_crc64nvme_is_a_full_object_checksum_s3_stores(s3_backend, tmp_path):
    """Above the threshold: parts, and the whole file's CRC64NVME stored as FULL_OBJECT,
    which registration compares like a single PutObject's."""
    store = _multipart_store(s3_backend)
    completed = _completions(s3_backend.client)
    local = tmp_path / "big"
    local.write_bytes(os.urandom(MIN_PART_SIZE + MIB))  # two parts
    stored = store.put_file("big", local, checksum_algorithm="crc64nvme")
    assert stored.checksum == file_checksum(local, "crc64nvme")
    [complete] = completed
    assert complete["ChecksumType"] == "FULL_OBJECT"
    assert len(complete["MultipartUpload"]["Parts"]) == 2
    head = s3_backend.client.head_object(
        Bucket=BUCKET, Key=f"{S3_PREFIX}/big", ChecksumMode="ENABLED"
    )
    assert head["ChecksumType"] == "FULL_OBJECT"
    assert head["ChecksumCRC64NVME"] == stored.checksum.partition(":")[2]
    assert head["ContentLength"] == stored.size == local.stat().st_size
    objects = S3ObjectStore(BUCKET, S3_PREFIX, client=s3_backend.client)
    assert objects.stored_checksum("big", "crc64nvme") == parse_checksum(stored.checksum).digest


def test_s3_multipart_crc32c_sends_the_whole_file_s_crc_as_full_object(s3_backend, tmp_path):
    """What is sent for CRC32C above the threshold. (moto computes the stored value itself
    and, without the optional 'crc32c' package, computes CRC32 for it: on moto the stored
    value is not comparable; S3 computes and checks CRC32C.)"""
    store = _multipart_store(s3_backend)
    completed = _completions(s3_backend.client)
    sent = _checksum_headers(s3_backend.client)
    data = os.urandom(MIN_PART_SIZE + 1000)
    stored = store.put_file("big", data, checksum_algorithm="crc32c")
    assert stored.checksum == file_checksum(data, "crc32c")
    [complete] = completed
    assert complete["ChecksumType"] == "FULL_OBJECT"
    assert complete["ChecksumCRC32C"] == stored.checksum.partition(":")[2]
    part_crcs = [p["ChecksumCRC32C"] for p in complete["MultipartUpload"]["Parts"]]
    assert part_crcs == [
        file_checksum(data[:MIN_PART_SIZE], "crc32c").partition(":")[2],
        file_checksum(data[MIN_PART_SIZE:], "crc32c").partition(":")[2],
    ]
    # each part went with its CRC32C as a header, for S3 to verify on arrival
    assert [h["x-amz-checksum-crc32c"] for h in sent if "x-amz-checksum-crc32c" in h][:2] == (
        part_crcs
    )
    head = s3_backend.client.head_object(
        Bucket=BUCKET, Key=f"{S3_PREFIX}/big", ChecksumMode="ENABLED"
    )
    assert head["ChecksumType"] == "FULL_OBJECT"


def test_s3_multipart_sha256_is_composite_so_s3_holds_no_whole_file_sha256(s3_backend):
    """S3 has no full-object SHA-256: above the threshold each part goes with its SHA-256
    (S3 verifies each) and S3 stores a checksum of the parts' checksums, COMPOSITE, not the
    file's: registration has nothing to compare the manifest's sha256 with."""
    store = _multipart_store(s3_backend)
    completed = _completions(s3_backend.client)
    data = os.urandom(MIN_PART_SIZE + 1000)
    stored = store.put_file("big", data, checksum_algorithm="sha256")
    assert stored.checksum == file_checksum(data, "sha256")  # the whole file's, for readers
    [complete] = completed
    assert [p["ChecksumSHA256"] for p in complete["MultipartUpload"]["Parts"]] == [
        file_checksum(data[:MIN_PART_SIZE], "sha256").partition(":")[2],
        file_checksum(data[MIN_PART_SIZE:], "sha256").partition(":")[2],
    ]
    head = s3_backend.client.head_object(
        Bucket=BUCKET, Key=f"{S3_PREFIX}/big", ChecksumMode="ENABLED"
    )
    assert head["ChecksumType"] == "COMPOSITE"
    assert head["ChecksumSHA256"].split("-")[0] != stored.checksum.partition(":")[2]
    assert store.get("big") == data


def test_s3_files_up_to_the_threshold_go_in_one_put(s3_backend):
    store = s3_backend.store(multipart_threshold=MIB, part_size=MIN_PART_SIZE)
    operations: list[str] = []
    s3_backend.client.meta.events.register(
        "before-call.s3.*", lambda model, **_: operations.append(model.name)
    )
    store.put_file("small", os.urandom(MIB), checksum_algorithm="crc32c")
    store.put_file("large", os.urandom(MIB + 1), checksum_algorithm="crc32c")
    assert operations == [
        "PutObject",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
    ]


def _conditions(client: Any) -> list[tuple[str, str | None]]:
    """Each request's operation and its If-None-Match header, as sent."""
    sent: list[tuple[str, str | None]] = []

    def record(request: Any, event_name: str, **_: Any) -> None:
        value = request.headers.get("If-None-Match")
        operation = event_name.rpartition(".")[2]
        sent.append((operation, value.decode() if isinstance(value, bytes) else value))

    client.meta.events.register("before-send.s3.*", record)
    return sent


@pytest.mark.parametrize("existing_size", [10, MIN_PART_SIZE + 10], ids=["put", "multipart"])
def test_s3_puts_create_only_a_single_put_and_a_multipart_upload_alike(s3_backend, existing_size):
    """Both ways up carry If-None-Match: * where S3 checks it (the PutObject; for a
    multipart upload, its completion), so a key that exists is refused (moto enforces
    both, as S3 does), the object there stays, and the refused upload is aborted."""
    store = _multipart_store(s3_backend)  # above 1 MiB: multipart
    first = os.urandom(existing_size)
    store.put_file("k", first, checksum_algorithm="crc32c")
    sent = _conditions(s3_backend.client)
    for second in (os.urandom(1000), os.urandom(MIN_PART_SIZE + 1000)):
        with pytest.raises(ObjectExistsError, match=r"'k' .*already exists .*not overwritten"):
            store.put_file("k", second, checksum_algorithm="crc32c")
        assert store.get("k") == first
    assert [(op, value) for op, value in sent if value is not None] == [
        ("PutObject", "*"),
        ("CompleteMultipartUpload", "*"),
    ]
    assert s3_backend.client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


def test_a_failed_part_aborts_the_multipart_upload(s3_backend, monkeypatch):
    store = _multipart_store(s3_backend)
    real_upload_part = s3_backend.client.upload_part

    def failing(**kwargs: Any) -> Any:
        if kwargs["PartNumber"] == 2:
            raise ClientError({"Error": {"Code": "InternalError"}}, "UploadPart")
        return real_upload_part(**kwargs)

    monkeypatch.setattr(s3_backend.client, "upload_part", failing)
    with pytest.raises(StoreUnavailableError, match="upload part 2"):
        store.put_file("big", os.urandom(MIN_PART_SIZE + 10), checksum_algorithm="crc32c")
    assert s3_backend.client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
    assert store.list("") == []


def test_s3_refusing_the_checksum_is_reported_as_the_file_changing(s3_backend, monkeypatch):
    store = s3_backend.store()

    def bad_digest(**_: Any) -> Any:
        raise ClientError({"Error": {"Code": "BadDigest", "Message": "mismatch"}}, "PutObject")

    monkeypatch.setattr(s3_backend.client, "put_object", bad_digest)
    with pytest.raises(InvalidRequestError, match="changed while it was uploaded"):
        store.put_file("obj", b"data", checksum_algorithm="crc32c")


def test_part_size_below_s3_s_minimum_is_refused(s3_client):
    with pytest.raises(ValueError, match="5 MiB"):
        open_store(f"s3://{BUCKET}", s3_client=s3_client, part_size=MIN_PART_SIZE - 1)


def test_open_store_refuses_an_unsupported_root():
    with pytest.raises(InvalidRequestError, match="s3://bucket"):
        open_store("http://example.com/x")
