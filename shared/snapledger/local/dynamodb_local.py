"""DynamoDB Local (the official engine) as a child process on a free loopback port.

Installed by ``tools/install-dynamodb-local.sh`` into ``.local/dynamodb-local``; started
by the test fixtures, the demo and ``snapledger local up``; stopped on exit.

The local runtime runs the functions and Spark jobs of a checkout (``functions/``,
``jobs/``), which a wheel of snapledger does not hold: installed from one, ``--local`` and
``local up`` say so in one line (:data:`NEEDS_CHECKOUT`) instead of looking for DynamoDB
Local beside ``site-packages``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from snapledger.errors import SnapledgerError

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_INSTALL_DIR = REPO_ROOT / ".local" / "dynamodb-local"
INSTALL_SCRIPT = REPO_ROOT / "tools" / "install-dynamodb-local.sh"
#: What a checkout has beside ``shared/snapledger`` that the local runtime needs.
_CHECKOUT_FILES = ("functions/__init__.py", "jobs/__init__.py", "tools/install-dynamodb-local.sh")
#: Said by ``--local`` and ``local up`` when snapledger was installed from a wheel.
NEEDS_CHECKOUT = (
    "--local and `snapledger local up` run the functions and Spark jobs of a snapledger "
    "checkout, which an installed package does not hold: clone the repository, run "
    "`make setup` in it and use its .venv/bin/snapledger"
)


class DynamoDBLocalError(SnapledgerError):
    """DynamoDB Local could not be found or started."""


class NotACheckoutError(DynamoDBLocalError):
    """snapledger runs from an installed package, not a checkout: no local runtime."""

    def __init__(self) -> None:
        super().__init__(NEEDS_CHECKOUT)


def in_checkout() -> bool:
    """True when this package runs from a checkout (``make setup``'s editable install),
    False when it was installed from a wheel."""
    return all((REPO_ROOT / name).is_file() for name in _CHECKOUT_FILES)


def require_checkout() -> None:
    """Raise :class:`NotACheckoutError` unless this package runs from a checkout."""
    if not in_checkout():
        raise NotACheckoutError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DynamoDBLocal:
    """A running DynamoDB Local; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        install_dir: Path | None = None,
        *,
        port: int | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.install_dir = Path(
            install_dir or os.environ.get("SNAPLEDGER_DYNAMODB_LOCAL_DIR") or DEFAULT_INSTALL_DIR
        )
        self.port = port or free_port()
        self.data_dir = data_dir
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The engine's process id while it runs."""
        return None if self._process is None else self._process.pid

    def start(self, timeout_s: float = 60.0) -> DynamoDBLocal:
        jar = self.install_dir / "DynamoDBLocal.jar"
        if not jar.is_file():
            require_checkout()  # from a wheel: no DynamoDB Local, nor the script to get it
            raise DynamoDBLocalError(
                f"DynamoDB Local is not installed at {self.install_dir}: "
                f"run {INSTALL_SCRIPT} (or `make setup`)"
            )
        java = shutil.which("java")
        if java is None:
            raise DynamoDBLocalError("DynamoDB Local needs Java 17+ on PATH: install a JRE")
        storage = ["-inMemory"]
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            storage = ["-dbPath", str(self.data_dir)]
        command = [
            java,
            "-Xmx1g",
            f"-Djava.library.path={self.install_dir / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            *storage,
            "-sharedDb",
            "-port",
            str(self.port),
        ]
        self._process = subprocess.Popen(
            command,
            cwd=self.install_dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop it cleanly
        )
        self._wait_until_listening(timeout_s)
        return self

    def _wait_until_listening(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                err = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise DynamoDBLocalError(f"DynamoDB Local exited at start: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise DynamoDBLocalError(
            f"DynamoDB Local did not listen on port {self.port} in {timeout_s}s"
        )

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
