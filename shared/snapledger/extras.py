"""snapledger's optional parts and the extra that installs each.

``pip install snapledger`` installs what the Lambda functions need; the client library needs
``snapledger[client]`` (pyarrow) and the command ``snapledger[cli]`` (click, rich). A part
used without its extra fails with :class:`MissingExtraError`, which names the extra and the
``pip install`` line, instead of a bare ``No module named 'pyarrow'``.
"""

from __future__ import annotations

import importlib
from typing import NoReturn

#: Extra → the top-level modules it installs that snapledger imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "client": ("pyarrow",),
    "cli": ("click", "rich"),
    "kafka": ("confluent_kafka",),
    "fluss": ("kazoo",),
}
#: Extra → the part of snapledger that needs it, as the message names it.
_USED_BY = {
    "client": "snapledger.client",
    "cli": "the snapledger command",
    "kafka": "snapledger.kafka_streams",
    "fluss": "GC of Fluss KV snapshots (its ZooKeeper nodes)",
}


class MissingExtraError(ModuleNotFoundError):
    """A module of one of snapledger's extras is not installed; the message names the extra."""


def install_line(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'snapledger[{extra}]'"


def raise_missing_extra(missing: ModuleNotFoundError, extra: str) -> NoReturn:
    """Raise ``missing`` as a :class:`MissingExtraError` naming ``extra`` if the module not
    found is one ``extra`` installs; else raise it as it is (another module is at fault)."""
    module = (missing.name or "").partition(".")[0]
    if module not in EXTRAS[extra]:
        raise missing
    raise MissingExtraError(
        f"{_USED_BY[extra]} needs {module}, which is not installed: {install_line(extra)}",
        name=module,
    ) from missing


def require_extra(extra: str) -> None:
    """Import every module ``extra`` installs, or raise :class:`MissingExtraError`."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as missing:
            raise_missing_extra(missing, extra)
