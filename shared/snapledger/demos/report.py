"""The checks and timings of a demo (``make demo``, ``make demo-restate``, ``make
demo-kafka``): each check printed as it runs, each step titled and timed, the count at the
end."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Report:
    """Checks and timings, printed as tables at the end."""

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    timings: list[tuple[str, float]] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    heartbeat_seconds: float = 15.0

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append((name, ok, detail))
        print(f"  [{'ok' if ok else 'FAIL'}] {name}{' - ' + detail if detail else ''}", flush=True)
        return ok

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        """A titled step, timed; every ``heartbeat_seconds`` it runs, a line says it still
        does (Spark jobs can be quiet for a minute)."""
        print(f"\n== {title}", flush=True)
        started = time.perf_counter()
        done = threading.Event()

        number = title.split(".", maxsplit=1)[0]

        def beat() -> None:
            while not done.wait(self.heartbeat_seconds):
                elapsed = time.perf_counter() - started
                print(f"   ... still working on step {number} ({elapsed:.0f}s)", flush=True)

        heartbeat = threading.Thread(target=beat, daemon=True, name="demo-heartbeat")
        heartbeat.start()
        try:
            yield
        finally:
            done.set()
            heartbeat.join()
        elapsed = time.perf_counter() - started
        self.timings.append((title, elapsed))
        print(f"   ({elapsed:.1f}s)", flush=True)

    @property
    def failed(self) -> list[str]:
        return [name for name, ok, _ in self.checks if not ok]

    def exit_status(self, suffix: str = "") -> int:
        """Print how many checks passed (and the failed ones, on stderr): 1 if any failed."""
        passed = len(self.checks) - len(self.failed)
        print(f"\n{passed} of {len(self.checks)} checks passed{suffix}", flush=True)
        if self.failed:
            print(f"FAILED checks: {', '.join(self.failed)}", file=sys.stderr)
            return 1
        return 0
