"""``kafka-seeder serve`` from Python: one resident seeder process for many catch-ups, so a
snapshot sidecar pays the JVM's start, its classes' loading and a consumer's set-up once, not
at every pass (docs/kafka-streams.md, "What a pass costs").

Each catch-up is one request line (the ``catch-up`` command's arguments, tab-separated); the
seeder answers with the command's JSON lines and a last ``{"served": status}`` line (0 done,
2 refused with the message, 1 failed). A process that died is started again by the next
request; its stderr goes to a temporary file, whose tail an error quotes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from snapledger.kafka_streams.catch_up import (
    DEFAULT_TIMEOUT_S,
    REFUSED,
    CatchUpError,
    CatchUpRefusedError,
    CatchUpResult,
    java_launch,
    parse_results,
    seeder_arguments,
)
from snapledger.kafka_streams.seed_format import TaskId

#: How long ``close`` waits for the process to end after its stdin closed, in seconds.
CLOSE_WAIT_S = 30.0
_TAIL_BYTES = 2000


class ResidentSeeder:
    """One ``kafka-seeder serve`` process, started at the first catch-up; ``close`` ends it."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The running process's id (None: none runs)."""
        return None if self._process is None else self._process.pid

    def catch_up_tasks(
        self,
        state_dir: Path,
        application_id: str,
        tasks: Sequence[TaskId],
        store: str,
        bootstrap_servers: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[TaskId, CatchUpResult]:
        """``catch_up.catch_up_tasks``, by the resident process."""
        arguments = seeder_arguments(
            "catch-up",
            state_dir,
            application_id=application_id,
            tasks=tasks,
            store=store,
            bootstrap_servers=bootstrap_servers,
            timeout_s=timeout_s,
        )
        carried = [a for a in arguments if "\t" in a or "\n" in a or "\r" in a]
        if carried:
            raise CatchUpError(
                f"{carried[0]!r} holds a tab or a line break, which a request to the resident "
                "seeder cannot carry: give a state dir, application id and store without them"
            )
        lines, answer = self._ask("\t".join(arguments))
        if answer["served"] == REFUSED:
            raise CatchUpRefusedError(answer.get("error", "refused"))
        if answer["served"] != 0:
            raise CatchUpError(f"{answer.get('error', 'failed')}: {self._stderr_tail()}")
        return parse_results(lines, tasks)

    def _ask(self, request: str) -> tuple[list[str], dict[str, Any]]:
        process = self._started()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(request + "\n")
            process.stdin.flush()
        except OSError as exc:  # it died since the last request
            raise self._stopped(f"its stdin closed ({exc})") from None
        lines: list[str] = []
        while line := process.stdout.readline():
            if line.startswith('{"served"'):
                return lines, json.loads(line)
            lines.append(line.rstrip("\n"))
        raise self._stopped("it stopped while answering")

    def _started(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the process's life)
        self._process = subprocess.Popen(
            [*java_launch(), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        return self._process

    def _stopped(self, how: str) -> CatchUpError:
        """The error of a process that died: it is reaped, and the next request starts one."""
        tail = self._stderr_tail()
        code = None if self._process is None else self._process.wait()
        self.close()
        return CatchUpError(f"the resident kafka-seeder failed: {how} (exit {code}): {tail}")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        size = self._stderr.seek(0, 2)
        self._stderr.seek(max(0, size - _TAIL_BYTES))
        return self._stderr.read().decode("utf-8", "replace").strip()

    def close(self) -> None:
        """End the process (its stdin closed; killed if it has not ended within
        ``CLOSE_WAIT_S``)."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            try:
                process.wait(timeout=CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __del__(self) -> None:
        # Unclosed (a caller that polled and never closed): its stdin's end stops it.
        process = getattr(self, "_process", None)
        if process is not None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()

    def __enter__(self) -> ResidentSeeder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
