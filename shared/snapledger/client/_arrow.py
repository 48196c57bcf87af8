"""pyarrow for the client's modules, or an error naming the extra that installs it
(``pip install 'snapledger[client]'``) instead of a bare ``No module named 'pyarrow'``."""

from __future__ import annotations

from snapledger.extras import raise_missing_extra

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
except ModuleNotFoundError as missing:
    raise_missing_extra(missing, "client")

__all__ = ["pa", "pc", "pq"]
