"""Fluss's snapshot nodes in ZooKeeper, through kazoo (the ``fluss`` extra).

``FlussSnapshotNodes`` (``ports/producers.py``) for a cluster whose ZooKeeper is at
``address`` (``host:port[,host:port...][/chroot]``, Fluss's ``zookeeper.address``) and whose
nodes are under ``root`` (Fluss's ``zookeeper.path.root``, ``/fluss`` by default). One
connection per instance, opened on first use; a request that cannot reach ZooKeeper within
``timeout_s`` raises ``FlussZooKeeperError`` naming the address.
"""

from __future__ import annotations

import threading
from typing import Any

from snapledger.extras import raise_missing_extra

DEFAULT_ROOT = "/fluss"
#: Seconds to connect, and for each request.
DEFAULT_TIMEOUT_S = 10.0


class FlussZooKeeperError(RuntimeError):
    """ZooKeeper could not be read or written: the message names the address and the node."""


class ZooKeeperFlussNodes:
    """A Fluss cluster's snapshot nodes (see the module docstring)."""

    def __init__(
        self, address: str, *, root: str = DEFAULT_ROOT, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.address = address
        self.root = root.rstrip("/")
        self.timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    def _zk(self) -> Any:
        with self._lock:
            if self._client is None:
                client = _kazoo().client.KazooClient(hosts=self.address, timeout=self.timeout_s)
                try:
                    client.start(timeout=self.timeout_s)
                except Exception as exc:
                    client.close()
                    raise FlussZooKeeperError(
                        f"Fluss's ZooKeeper at {self.address} did not answer within "
                        f"{self.timeout_s:g} s ({exc}): check SNAPLEDGER_FLUSS_ZOOKEEPER"
                    ) from exc
                self._client = client
            return self._client

    def _bucket(self, table_id: int, bucket: int) -> str:
        return f"{self.root}/tabletservers/tables/{table_id}/buckets/{bucket}/snapshots"

    def listed(self, table_id: int, bucket: int) -> set[int]:
        NoNodeError = _kazoo().exceptions.NoNodeError  # noqa: N806 - kazoo's class
        zk, path = self._zk(), self._bucket(table_id, bucket)
        try:
            children = zk.get_children(path)
        except NoNodeError:
            return set()
        except Exception as exc:
            raise FlussZooKeeperError(f"listing {path} at {self.address}: {exc}") from exc
        return {int(child) for child in children if child.isdigit()}

    def drop(self, table_id: int, bucket: int, snapshot_id: int) -> bool:
        NoNodeError = _kazoo().exceptions.NoNodeError  # noqa: N806 - kazoo's class
        path = f"{self._bucket(table_id, bucket)}/{snapshot_id}"
        try:
            self._zk().delete(path)
        except NoNodeError:
            return False
        except Exception as exc:
            raise FlussZooKeeperError(f"deleting {path} at {self.address}: {exc}") from exc
        return True

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.stop()
                self._client.close()
                self._client = None


def _kazoo() -> Any:
    """kazoo, with its client and exceptions, or MissingExtraError naming the extra."""
    try:
        import kazoo.client
        import kazoo.exceptions
    except ModuleNotFoundError as missing:
        raise_missing_extra(missing, "fluss")
    return kazoo
