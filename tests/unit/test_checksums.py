"""core/checksums.py: the standard check values, both spellings, and clear errors."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core import checksums
from snapledger.core.checksums import (
    DIGEST_BYTES,
    ChecksumError,
    Hasher,
    compute,
    mismatch,
    parse_checksum,
)

CHECK = b"123456789"  # the CRC catalogue's check input


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        ("crc32c", "e3069283"),  # CRC-32/ISCSI check value
        ("crc64nvme", "ae8b14860a799888"),  # CRC-64/NVME check value
        ("sha256", hashlib.sha256(CHECK).hexdigest()),
        ("md5", hashlib.md5(CHECK).hexdigest()),
    ],
)
def test_each_algorithm_gives_its_catalogue_check_value(algorithm, expected):
    assert compute(algorithm, CHECK).digest.hex() == expected


def test_hex_and_s3s_base64_name_the_same_digest():
    digest = compute("crc64nvme", CHECK)
    assert parse_checksum(f"crc64nvme:{digest.digest.hex()}") == digest
    assert parse_checksum(f"crc64nvme:{digest.s3_form}") == digest
    sha = hashlib.sha256(b"x").digest()
    assert parse_checksum(f"sha256:{base64.b64encode(sha).decode()}").digest == sha


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sha1:abcd", "algorithm one of crc64nvme, crc32c, sha256, md5"),
        ("sha256", "expected '{algorithm}:{digest}'"),
        ("crc32c:abc", "a crc32c digest is 4 bytes, written as 8 hex digits or 8 base64"),
        ("sha256:" + "zz" * 32, "a sha256 digest is 32 bytes"),
    ],
)
def test_an_unreadable_checksum_says_what_is_accepted(text, message):
    with pytest.raises(ChecksumError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse_checksum(text)


def test_a_mismatch_names_the_file_and_both_values():
    stated, stored = compute("crc32c", b"a"), compute("crc32c", b"b")
    reason = mismatch("part-00000.parquet", stated, stored)
    assert reason is not None
    assert "part-00000.parquet" in reason
    assert stated.digest.hex() in reason and stored.digest.hex() in reason
    assert mismatch("part-00000.parquet", stated, compute("crc32c", b"a")) is None


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=3000), cut=st.integers(min_value=0, max_value=3000))
def test_a_digest_taken_in_chunks_is_the_digest_of_the_whole(data: bytes, cut: int) -> None:
    for algorithm in DIGEST_BYTES:
        hasher = Hasher(algorithm)
        hasher.update(data[:cut])
        hasher.update(data[cut:])
        assert hasher.checksum() == compute(algorithm, data)


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=3000), previous=st.integers(min_value=0, max_value=2**32 - 1))
def test_the_native_crcs_agree_with_the_pure_python_tables(data: bytes, previous: int) -> None:
    crt = pytest.importorskip("awscrt.checksums")
    assert checksums._crc32c_python(data, previous) == crt.crc32c(data, previous)
    assert checksums._crc64nvme_python(data, previous) == crt.crc64nvme(data, previous)
