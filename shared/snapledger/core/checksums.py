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
    hasher = Hasher(algorithm)
    hasher.update(data)
    return hasher.checksum()


class Hasher:
    """An ``algorithm`` digest taken over data given in chunks (a file streamed).

    CRCs use the AWS CRT's native code when it is installed (``botocore[crt]``, the
    client's extra: gigabytes a second), else the pure-Python tables (a few MB a second:
    fine for the file store's small files and for tests).
    """

    def __init__(self, algorithm: str) -> None:
        if algorithm not in DIGEST_BYTES:
            raise ChecksumError(
                f"unknown checksum algorithm {algorithm!r}: one of {', '.join(DIGEST_BYTES)}"
            )
        self.algorithm = algorithm
        self._hash = (
            hashlib.new(algorithm, usedforsecurity=False)
            if algorithm in ("sha256", "md5")
            else None
        )
        self._crc = 0

    def update(self, data: bytes) -> None:
        if self._hash is not None:
            self._hash.update(data)
        elif self.algorithm == "crc32c":
            self._crc = _crc32c(data, self._crc)
        else:
            self._crc = _crc64nvme(data, self._crc)

    def checksum(self) -> Checksum:
        if self._hash is not None:
            return Checksum(self.algorithm, self._hash.digest())
        return Checksum(self.algorithm, self._crc.to_bytes(DIGEST_BYTES[self.algorithm], "big"))


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


def _crc(data: bytes, table: tuple[int, ...], mask: int, previous: int) -> int:
    crc = previous ^ mask
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ mask


def _crc32c_python(data: bytes, previous: int) -> int:
    return _crc(data, _CRC32C, 0xFFFFFFFF, previous)


def _crc64nvme_python(data: bytes, previous: int) -> int:
    return _crc(data, _CRC64NVME, 0xFFFFFFFFFFFFFFFF, previous)


try:  # the AWS CRT, where installed: the same CRCs in native code
    from awscrt.checksums import crc32c as _crc32c
    from awscrt.checksums import crc64nvme as _crc64nvme
except ImportError:  # e.g. in the Lambda package, which never computes a CRC
    _crc32c = _crc32c_python
    _crc64nvme = _crc64nvme_python
