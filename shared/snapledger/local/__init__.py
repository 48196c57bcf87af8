"""The local runtime: the functions in-process against DynamoDB Local and a folder.

``connect()`` gives the control client (``snapledger.client.Snapledger``) on it:

    with snapledger.local.connect() as registry:
        head = registry.latest("orders", 3)["head"]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snapledger.client.control import Snapledger


def connect(home: str | Path | None = None) -> Snapledger:
    """The local runtime in ``home`` (default ``.local/state``), started in-process, as a
    ``Snapledger`` client; close it (or use ``with``) to stop it. A job it starts runs
    before the call returns."""
    # Imported here: ``snapledger.local.router`` and the rest need neither.
    from snapledger.client.control import Snapledger
    from snapledger.local.transport import LocalTransport

    transport = LocalTransport.open(home)
    return Snapledger(transport, close=transport.close)
