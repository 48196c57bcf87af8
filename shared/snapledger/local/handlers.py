"""The local runtime's handler table: each function's ``handler`` by name, as Lambda runs it.

The table is what ``Router`` and the local transport are given; each entry imports its
function on first use, so a command imports only the functions it calls (``functions.*``
build their Powertools and runtime objects at import). The imports are written out, not
built from a name, so the layer check (tools/check_layers.py) sees them. The events Pipe's
enrichment (``ledger_events``) is not here: the local runtime has no Pipe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

from snapledger.local.router import Handler, call_handler


def _gc() -> Handler:
    from functions.gc import handler

    return handler


def _job_state() -> Handler:
    from functions.job_state import handler

    return handler


def _launch() -> Handler:
    from functions.launch import handler

    return handler


def _query() -> Handler:
    from functions.query import handler

    return handler


def _register() -> Handler:
    from functions.register import handler

    return handler


def _track_changelog() -> Handler:
    from functions.track_changelog import handler

    return handler


_LOADERS: dict[str, Callable[[], Handler]] = {
    "gc": _gc,
    "job_state": _job_state,
    "launch": _launch,
    "query": _query,
    "register": _register,
    "track_changelog": _track_changelog,
}


class FunctionHandlers(Mapping[str, Handler]):
    """``functions.{name}.handler`` by name, each imported when first looked up."""

    def __getitem__(self, name: str) -> Handler:
        if name not in _LOADERS:
            raise KeyError(f"there is no function {name!r}: one of {', '.join(_LOADERS)}")
        return _LOADERS[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(_LOADERS)

    def __len__(self) -> int:
        return len(_LOADERS)


HANDLERS = FunctionHandlers()


class LogsRouted(Mapping[str, Handler]):
    """``handlers`` whose Powertools logs go to ``stream``, not the stdout Lambda logs to.

    A function's ``Logger()`` writes to the stdout of the moment it was made (its import,
    on first lookup here); in a CLI that stdout is the answer's, and one log line before a
    ``--json`` answer makes it two documents. Each lookup points every Powertools handler
    at ``stream`` (the snapledger.* stdlib loggers propagate to it); ``restore()`` puts
    back the streams they had.
    """

    def __init__(self, handlers: Mapping[str, Handler], stream: TextIO) -> None:
        self._handlers = handlers
        self._stream = stream
        self._saved: dict[int, tuple[logging.StreamHandler[Any], Any]] = {}

    def __getitem__(self, name: str) -> Handler:
        handler = self._handlers[name]  # imports the function: its Logger is made then
        for log in _powertools_handlers():
            if log.stream is not self._stream:
                self._saved.setdefault(id(log), (log, log.stream))
                _point(log, self._stream)
        return handler

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)

    def restore(self) -> None:
        for log, stream in self._saved.values():
            _point(log, stream)
        self._saved.clear()


def _point(log: logging.StreamHandler[Any], stream: Any) -> None:
    """``log`` writes to ``stream`` from now on; the stream it had is flushed unless it
    was closed meanwhile (a test's captured stdout, gone with its test)."""
    try:
        log.setStream(stream)
    except ValueError:  # flushing the closed stream: nothing to flush
        log.stream = stream


def _powertools_handlers() -> list[logging.StreamHandler[Any]]:
    """The stream handlers Powertools' ``Logger`` attached (one per service name)."""
    found = []
    for logger in list(logging.Logger.manager.loggerDict.values()):
        handler = getattr(logger, "powertools_handler", None)
        if isinstance(handler, logging.StreamHandler):
            found.append(handler)
    return found


def invoke(name: str, event: dict[str, Any], request_id: str | None = None) -> dict[str, Any]:
    """Call the function ``name``'s handler as Lambda would (a new request id per call)."""
    return call_handler(HANDLERS, name, event, request_id)
