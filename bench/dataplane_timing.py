"""Timing the data plane: wall and CPU seconds, the median of interleaved rounds.

On a shared machine the wall clock swings more than the effects measured (other work
takes the cores a job waits for), so the figures the bars read are CPU seconds: those of
the JVM that runs Spark (local mode: the driver and every task) plus this process's own
(the Python driver program, which makes the py4j calls), read from /proc and getrusage;
for DuckDB, which runs inside this process, this process's. Each action runs once per
round, the rounds interleaving the actions (a machine that slows down in the middle
slows every action of that round alike), after untimed warm-up rounds (the JIT compiles
each job's code over its first runs). A figure is the median of the rounds, with their
min and max: a best-of hides the spread.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CpuClock = Callable[[], float]
Measured = tuple[Callable[[], Any], CpuClock]  # an action and the CPU clock it runs on


@dataclass(frozen=True)
class Spread:
    """The median, min and max of one measure over the rounds."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("no rounds were timed")
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True)
class Timing:
    """Wall and CPU seconds of one action over the rounds."""

    wall: Spread
    cpu: Spread

    def figures(self, name: str) -> dict[str, float]:
        """``{name}_s`` and ``{name}_cpu_s`` (medians), each with ``_min`` and ``_max``."""
        out: dict[str, float] = {}
        for suffix, spread in (("_s", self.wall), ("_cpu_s", self.cpu)):
            out[name + suffix] = round(spread.median, 3)
            out[name + suffix + "_min"] = round(spread.low, 3)
            out[name + suffix + "_max"] = round(spread.high, 3)
        return out


def interleaved(
    actions: Mapping[str, Measured], *, rounds: int, warm_up: int
) -> dict[str, tuple[Timing, Any]]:
    """Each action's ``Timing`` over ``rounds`` rounds that run every action once, in
    order, after ``warm_up`` untimed rounds; with the result of its last run (a restore
    rerun under the same job id replaces its output, so the last run's is on disk)."""
    walls: dict[str, list[float]] = {name: [] for name in actions}
    cpus: dict[str, list[float]] = {name: [] for name in actions}
    results: dict[str, Any] = {}
    for index in range(warm_up + rounds):
        for name, (action, cpu_clock) in actions.items():
            cpu_started, started = cpu_clock(), time.perf_counter()
            results[name] = action()
            wall, cpu = time.perf_counter() - started, cpu_clock() - cpu_started
            if index >= warm_up:
                walls[name].append(wall)
                cpus[name].append(cpu)
    return {
        name: (Timing(Spread.of(walls[name]), Spread.of(cpus[name])), results[name])
        for name in actions
    }


def jvm_cpu_clock(spark: Any) -> CpuClock:
    """CPU seconds used so far by the JVM that runs Spark (local mode: driver and tasks,
    from /proc on Linux) and by this process (the Python driver program)."""
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    ticks = os.sysconf("SC_CLK_TCK")
    stat = Path(f"/proc/{pid}/stat")

    def clock() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks + own_cpu_clock()  # utime + stime

    return clock


def own_cpu_clock() -> float:
    """CPU seconds used so far by this process, every thread (DuckDB's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 3) if denominator > 0 else float("nan")
