"""Processes the local runtime starts beside itself (the Restate server, moto's S3 server,
the test service): each in its own session, its output appended to a log file, stopped by
its own pid (SIGTERM, then SIGKILL), and killed if the process that started it dies
without stopping it (Linux ``PR_SET_PDEATHSIG``)."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """SIGKILL this child if the test process dies first (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def spawn(command: list[str], log: Path, *, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - only prctl, no locks or threads
        )


def stop(process: subprocess.Popen[bytes] | None, *, kill: bool = False) -> None:
    """Stop one process we started, by its pid: SIGTERM (or SIGKILL), wait, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def wait_for(
    what: str,
    probe: Callable[[], bool],
    process: subprocess.Popen[bytes],
    log: Path,
    *,
    timeout_s: float,
    error: type[Exception] = RuntimeError,
) -> None:
    """Wait until ``probe()`` holds; raise ``error`` with the log's tail if ``process``
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise error(
                f"{what} exited with code {process.returncode} at start; log {log}:\n{tail(log)}"
            )
        if probe():
            return
        time.sleep(0.05)
    raise error(f"{what} not ready after {timeout_s}s; log {log}:\n{tail(log)}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - loopback
            return bool(200 <= response.status < 300)
    except (urllib.error.URLError, OSError):
        return False
