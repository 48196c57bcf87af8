"""Manifest checksums: parse ``{algorithm}:{digest}``, compute a digest, compare.

A manifest states a file's checksum as ``{algorithm}:{digest}``, the digest in hex or in
the base64 form S3 returns for its additional checksums (``ChecksumSHA256``,
``ChecksumCRC32C``, ``ChecksumCRC64NVME``: the big-endian bytes of the digest). Both
forms name the same bytes, so a comparison is of bytes, never of spellings.

CRC32C and CRC64/NVME are computed here in pure Python (table-driven, the reflected
polynomials of S3's definitions) for the stores that keep no checksum of their own (the
``file://`` store); S3 computes its own at upload.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

#: Algorithm → digest length in bytes.
DIGEST_BYTES = {"crc64nvme": 8, "crc32c": 4, "sha256": 32, "md5": 16}


class ChecksumError(ValueError):
    """A checksum that cannot be read: names what was given and what is accepted."""


@dataclass(frozen=True, slots=True)
class Checksum:
    algorithm: str
    digest: bytes

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.digest.hex()}"

    @property
    def s3_form(self) -> str:
        """The digest as S3 returns it (base64 of its bytes)."""
        return base64.b64encode(self.digest).decode()


def parse_checksum(text: str) -> Checksum:
    """``{algorithm}:{digest}`` (hex or base64) → a Checksum; ChecksumError if unreadable."""
    algorithm, sep, digest = text.partition(":")
    size = DIGEST_BYTES.get(algorithm)
    if not sep or size is None:
        raise ChecksumError(
            f"checksum {text!r}: expected '{{algorithm}}:{{digest}}' with algorithm one of "
            f"{', '.join(DIGEST_BYTES)}"
        )
    if len(digest) == 2 * size:
        try:
            return Checksum(algorithm, bytes.fromhex(digest))
        except ValueError:
            pass  # not hex: perhaps base64 of the same length
    try:
        raw = base64.b64decode(digest, validate=True)
    except binascii.Error:
        raw = b""
    if len(raw) != size:
        raise ChecksumError(
            f"checksum {text!r}: a {algorithm} digest is {size} bytes, written as "
            f"{2 * size} hex digits or {len(base64.b64encode(bytes(size)))} base64 characters"
        )
    return Checksum(algorithm, raw)


def compute(algorithm: str, data: bytes) -> Checksum:
    """The ``algorithm`` digest of ``data``."""
    if algorithm in ("sha256", "md5"):
        return Checksum(algorithm, hashlib.new(algorithm, data).digest())
    if algorithm == "crc32c":
        return Checksum(algorithm, _crc(data, _CRC32C, 0xFFFFFFFF).to_bytes(4, "big"))
    if algorithm == "crc64nvme":
        return Checksum(algorithm, _crc(data, _CRC64NVME, 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big"))
    raise ChecksumError(
        f"unknown checksum algorithm {algorithm!r}: one of {', '.join(DIGEST_BYTES)}"
    )


def mismatch(path: str, stated: Checksum, stored: Checksum) -> str | None:
    """The rejection reason when ``stored`` is not what the manifest ``stated``, else None."""
    if stated.digest == stored.digest:
        return None
    return (
        f"{path}: the manifest's {stated.algorithm} is {stated.digest.hex()}, the stored "
        f"object's is {stored.digest.hex()} (the file changed after its checksum was taken, "
        "or the manifest names another file's): write the file and its manifest again"
    )


def _table(reflected_polynomial: int) -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ reflected_polynomial if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C = _table(0x82F63B78)  # 0x1EDC6F41, bit-reversed
_CRC64NVME = _table(0x9A6C9329AC4BC9B5)  # 0xAD93D23594C93659, bit-reversed


def _crc(data: bytes, table: tuple[int, ...], mask: int) -> int:
    crc = mask
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ mask
