"""What the steps of ``make demo`` share: the stream, the local runtime and Spark runner,
the router that plays S3's notifications, the report, and what one step leaves the next."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapledger.demos.report import Report
from snapledger.local.handlers import invoke
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.local.spark_runner import LocalSparkRunner

STREAM = "orders"


@dataclass
class Demo:
    root: Path
    partitions: int
    rows: int
    local: LocalRuntime
    runner: LocalSparkRunner
    router: Router
    report: Report = field(default_factory=Report)
    changelog_end: dict[int, int] = field(default_factory=dict)
    #: The GC dry run's report (step 4), drawn at the end.
    gc_plan: dict[str, Any] = field(default_factory=dict)
    #: Each partition's restore of its latest (step 5): job id and target LSN.
    restored: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: Each partition's latest snapshot id as the ledger had it when the runtime stopped.
    latest_ids: dict[int, str] = field(default_factory=dict)

    @property
    def root_uri(self) -> str:
        return self.local.root.as_uri()

    def call(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        answer = invoke(function, payload)
        self.runner.drain()  # the jobs it started, and what they triggered, finish
        return answer

    def head(self, partition: int) -> dict[str, Any]:
        answer = invoke("query", {"action": "latest", "stream": STREAM, "partition": partition})
        head: dict[str, Any] = answer.get("head", {})
        return head

    def generate(self, rows: int, seed: int) -> None:
        from jobs.changelog_gen import generate_changelog

        start = 0 if not self.changelog_end else min(self.changelog_end.values()) + 1
        generated = generate_changelog(
            self.runner.spark(),
            self.root_uri,
            STREAM,
            partitions=self.partitions,
            rows=rows,
            rows_per_segment=max(1, rows // self.partitions // 4),
            start_lsn=start,
            seed=seed,
        )
        self.changelog_end = {p: generated.last_lsn(p) for p in range(self.partitions)}
        end = max(self.changelog_end.values())
        print(f"   wrote {rows:,} records, LSNs {start:,}..{end:,} per partition")

    def deliver_arrivals(self) -> list[dict[str, Any]]:
        """What S3 notifications would do: each new object reaches its function (the demo's
        own writes are finished: no need to wait for them to settle)."""
        answers = self.router.scan(settled=True)
        self.runner.drain()
        return answers
