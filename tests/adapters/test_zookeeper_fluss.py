"""Fluss's snapshot nodes through kazoo: clear errors when kazoo is missing or ZooKeeper is
unreachable (the real ZooKeeper is read and written by tests/fluss/test_fluss_kv_snapshots.py)."""

from __future__ import annotations

import socket
import sys

import pytest

from snapledger.adapters.zookeeper_fluss import FlussZooKeeperError, ZooKeeperFlussNodes
from snapledger.extras import MissingExtraError


def test_without_kazoo_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "kazoo", None)
    monkeypatch.setitem(sys.modules, "kazoo.client", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'snapledger\[fluss\]'"):
        ZooKeeperFlussNodes("127.0.0.1:2181").listed(1, 0)


def test_an_unreachable_zookeeper_is_named_with_the_setting():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    nodes = ZooKeeperFlussNodes(f"127.0.0.1:{port}", timeout_s=1.0)
    with pytest.raises(
        FlussZooKeeperError,
        match=rf"127.0.0.1:{port} did not answer.*"
        r"SNAPLEDGER_FLUSS_ZOOKEEPER",
    ):
        nodes.drop(1, 0, 3)
