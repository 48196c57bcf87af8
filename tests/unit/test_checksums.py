"""core/checksums.py: the standard check values, both spellings, and clear errors."""

from __future__ import annotations

import base64
import hashlib

import pytest

from snapledger.core.checksums import ChecksumError, compute, mismatch, parse_checksum

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
