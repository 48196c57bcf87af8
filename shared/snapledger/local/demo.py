"""``make demo``: the whole snapshot lifecycle on the embedded default, on one machine.

DynamoDB Local (started here, stopped on exit and on Ctrl-C), a ``file://`` store under
``demo-data/``, a local SparkSession, and the same functions that run in AWS, reached
through the in-process router as S3 and EMR Serverless events:

1. generate a changelog for the stream ``orders`` (4 partitions, 1M records by default);
2. bootstrap every partition with the Spark job (manifests → register, as S3 would);
3. append changelog twice: each time the record threshold starts a compaction, and the
   latest pointer advances;
4. plan GC (dry run: what is kept and why), then run it;
5. restore the latest snapshot, and an older one as of an LSN, and check each restore
   equals a full replay of the changelog;
6. ask for a stream snapshot: every partition's processor writes its snapshot with the
   generation, the generation completes, and the whole stream is restored to it in one
   job, each partition checked against a full replay;
7. draw a lineage's timeline and the GC plan (``demo-data/timeline-orders-0.html``,
   ``demo-data/gc-plan.svg``);
8. with DynamoDB Local and the functions stopped, bootstrap every partition from its
   ``latest.json`` alone.

Every check is printed and counted; the exit status is non-zero if any fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapledger.core.compaction_trigger import CompactionConfig, CompactionThresholds
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.replay import check_restore_equals_replay
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.local.spark_runner import LocalSparkRunner

STREAM = "orders"


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


def run_scenario(demo: Demo) -> None:
    report = demo.report
    per_round = demo.rows // 4
    with report.step(f"1. changelog: {demo.rows:,} records over {demo.partitions} partitions"):
        demo.generate(demo.rows, seed=1)

    with report.step("2. bootstrap every partition (local Spark job)"):
        answer = demo.call(
            "launch",
            {"action": "bootstrap", "stream": STREAM, "partitions": list(range(demo.partitions))},
        )
        report.check(
            "bootstrap launched", answer.get("ok") is True, answer.get("job_id", str(answer))
        )
        job = invoke("query", {"action": "job", "job_id": answer.get("job_id", "")}).get("job", {})
        report.check(
            "bootstrap job SUCCESS", job.get("state") == "SUCCESS", job.get("failure_reason") or ""
        )
        demo.deliver_arrivals()  # the changelog's own notifications: counted, nothing due
        for p in range(demo.partitions):
            head = demo.head(p)
            report.check(
                f"{STREAM}/{p}: latest at the end of the changelog",
                head.get("latest_lsn") == demo.changelog_end[p],
                f"LSN {head.get('latest_lsn')}",
            )

    for round_no in (1, 2):
        with report.step(f"3.{round_no} append {per_round:,} records: threshold -> compaction"):
            before = {p: demo.head(p).get("latest_lsn") for p in range(demo.partitions)}
            demo.generate(per_round, seed=1 + round_no)
            answers = demo.deliver_arrivals()
            started = {
                r.get("compaction_job_id")
                for a in answers
                for r in a.get("records", [])
                if r.get("compaction_job_id")
            }
            report.check(
                f"round {round_no}: one compaction per partition",
                len(started) == demo.partitions,
                f"{len(started)} jobs",
            )
            for p in range(demo.partitions):
                after = demo.head(p).get("latest_lsn")
                report.check(
                    f"{STREAM}/{p}: latest advanced {before[p]} -> {after}",
                    after == demo.changelog_end[p] and (after or 0) > (before[p] or 0),
                )

    with report.step("4. GC: policy min_count 2, min_age 0h; dry run, then run"):
        policy = demo.call(
            "gc", {"action": "policy_set", "stream": STREAM, "min_count": 2, "min_age_hours": 0}
        )
        report.check(
            "policy set", policy.get("ok") is True, json.dumps(policy.get("policy", policy))
        )
        plan = demo.call("gc", {"dry_run": True, "stream": STREAM})
        demo.gc_plan = plan.get("report", {})
        _print_plan(plan)
        run = demo.call("gc", {"dry_run": False, "stream": STREAM})
        report.check("GC ran", run.get("ok") is True)
        for p in range(demo.partitions):
            listed = invoke("query", {"action": "list", "stream": STREAM, "partition": p})
            statuses = [s["status"] for s in listed.get("snapshots", [])]  # newest first
            report.check(
                f"{STREAM}/{p}: kept the newest 2, deleted the bootstrap snapshot",
                statuses == ["REGISTERED", "REGISTERED", "DELETED"],
                ",".join(statuses),
            )
            demo.report.rows.append([f"{STREAM}/{p}", *statuses])

    restore_and_compare(demo, per_round)


def restore_and_compare(demo: Demo, per_round: int) -> None:
    """Restore each partition's latest, and an older one as of an LSN; each equals a full
    replay of the changelog to its target."""
    report = demo.report
    with report.step("5. restore latest and as of an older LSN; compare with full replay"):
        spark = demo.runner.spark()
        tail = max(demo.partitions, per_round // 8)  # below the threshold: no compaction
        demo.generate(tail, seed=9)
        demo.deliver_arrivals()
        for p in range(demo.partitions):
            listed = invoke("query", {"action": "list", "stream": STREAM, "partition": p})
            kept = [s for s in listed.get("snapshots", []) if s["status"] == "REGISTERED"]
            older_target = kept[-1]["lsn"] + per_round // demo.partitions // 2
            for source, target in (("latest", None), ({"lsn": older_target}, older_target)):
                payload: dict[str, Any] = {
                    "action": "restore",
                    "stream": STREAM,
                    "partition": p,
                    "from": source,
                }
                if target is not None:
                    payload["target_lsn"] = target
                answer = demo.call("launch", payload)
                described = "latest" if target is None else f"the snapshot as of LSN {target}"
                if not report.check(
                    f"{STREAM}/{p}: restore from {described} launched",
                    answer.get("ok") is True,
                    answer.get("message", ""),
                ):
                    continue
                [plan] = answer["partitions"]
                if source == "latest":
                    demo.restored[p] = (answer["job_id"], plan["target_lsn"])
                check = check_restore_equals_replay(
                    spark,
                    demo.root_uri,
                    STREAM,
                    partition=p,
                    job_id=answer["job_id"],
                    target_lsn=plan["target_lsn"],
                )
                span = f"{plan['base_lsn']}..{plan['target_lsn']}"
                report.check(
                    f"{STREAM}/{p}: restore of LSN {span} equals full replay",
                    check.equal,
                    f"{check.restored_rows:,} rows, {check.differing_rows} differ",
                )


def stream_snapshot(demo: Demo) -> None:
    """A snapshot of the whole stream: requested, each processor's snapshot (its state: the
    restore of step 5) registered with the generation, completed; the stream restored to it
    in one job and each partition compared with a full replay."""
    from snapledger.client import SnapshotReader, SnapshotWriter

    report = demo.report
    partitions = list(range(demo.partitions))
    with report.step("6. stream snapshot: request, every partition answers, restore the stream"):
        minimum = {str(p): demo.restored[p][1] for p in partitions}
        asked = demo.call(
            "launch",
            {"action": "snapshot_stream", "stream": STREAM, "partitions": partitions,
             "min_lsn": minimum, "deadline_minutes": 30},
        )  # fmt: skip
        generation = asked.get("generation")
        report.check(
            f"generation {generation} requested",
            asked.get("status") == "REQUESTED",
            _outcome(asked),
        )
        reader = SnapshotReader(demo.root_uri)
        for p in partitions:
            job_id, lsn = demo.restored[p]
            state = reader.open_restore(job_id, p).to_arrow()
            epoch = demo.head(p).get("max_epoch") or 0
            SnapshotWriter(demo.root_uri, STREAM, p).write(
                lsn, epoch, state, offsets={f"{STREAM}-{p}": lsn + 1}, generation=generation
            )
        demo.deliver_arrivals()  # each manifest registers and counts for the generation
        done = invoke("query", {"action": "generation", "stream": STREAM}).get("generation", {})
        report.check(
            f"generation {generation} COMPLETED by all {demo.partitions} partitions",
            done.get("status") == "COMPLETED" and len(done.get("members", [])) == len(partitions),
            f"missing {done.get('missing')}",
        )
        answer = demo.call(
            "launch", {"action": "restore", "stream": STREAM, "from": {"generation": generation}}
        )
        if not report.check("stream restore launched", answer.get("ok") is True, _outcome(answer)):
            return
        spark = demo.runner.spark()
        for plan in answer["partitions"]:
            check = check_restore_equals_replay(
                spark,
                demo.root_uri,
                STREAM,
                partition=plan["partition"],
                job_id=answer["job_id"],
                target_lsn=plan["target_lsn"],
            )
            report.check(
                f"{STREAM}/{plan['partition']}: stream restore from generation {generation} "
                f"(LSN {plan['base_lsn']}..{plan['target_lsn']}) equals full replay",
                check.equal,
                f"{check.restored_rows:,} rows, {check.differing_rows} differ",
            )


def draw_pictures(demo: Demo) -> None:
    """A lineage's timeline and the GC plan, drawn from the functions' answers."""
    from snapledger.cli import pictures

    with demo.report.step("7. pictures: a lineage's timeline and the GC plan"):
        lineage = {"stream": STREAM, "partition": 0}
        snapshots = invoke("query", {"action": "list", **lineage}).get("snapshots", [])
        jobs = invoke("query", {"action": "jobs", "limit": 100}).get("jobs", [])
        drawn = pictures.timeline(STREAM, 0, snapshots, demo.head(0), jobs)
        timeline = pictures.write(drawn, demo.root / f"timeline-{STREAM}-0.html", f"{STREAM}/0")
        plan = pictures.write(pictures.gc_plan(demo.gc_plan), demo.root / "gc-plan.svg", "GC")
        demo.report.check(
            f"timeline of {STREAM}/0 drawn",
            drawn.svg.count('class="snapshot ') == len(snapshots) > 0,
            str(timeline),
        )
        demo.report.check("GC plan drawn", plan.stat().st_size > 0, str(plan))


def bootstrap_from_the_bucket(demo: Demo) -> None:
    """With the functions and the table stopped: each partition's latest, found through
    its ``latest.json`` (one GET) and read back with every file checked."""
    from snapledger.client import SnapshotReader

    reader = SnapshotReader(demo.root_uri)
    with demo.report.step("8. functions and table stopped: bootstrap from latest.json"):
        for p in range(demo.partitions):
            opened = reader.open_latest(STREAM, p)
            rows = opened.to_arrow().num_rows  # every file's size and checksum checked
            demo.report.check(
                f"{STREAM}/{p}: latest.json names the ledger's latest and reads back",
                opened.snapshot_id == demo.latest_ids.get(p)
                and rows == sum(f.rows or 0 for f in opened.files),
                f"{opened.snapshot_id} at LSN {opened.lsn:,}: {rows:,} rows",
            )


def _outcome(answer: dict[str, Any]) -> str:
    """A function's answer in one readable line: its outcome, ids and message, never the
    whole dict (a launch's answer runs to 1,500 characters)."""
    facts = [f"{key} {answer[key]}" for key in _OUTCOME_KEYS if answer.get(key) not in (None, "")]
    if isinstance(answer.get("partitions"), list):
        facts.append(f"{len(answer['partitions'])} partitions")
    if answer.get("error"):
        facts.append(f"error {answer['error']}")
    return ", ".join(facts)


_OUTCOME_KEYS = ("status", "job_id", "generation", "deadline", "message")


def _print_plan(plan: dict[str, Any]) -> None:
    report = plan.get("report", {})
    for lineage in report.get("lineages", []):
        print(f"   {lineage.get('stream')}/{lineage.get('partition')}:")
        for kept in lineage.get("kept", []):
            print(f"     keep   LSN {kept.get('lsn'):>12}  {', '.join(kept.get('reasons', []))}")
        for doomed in lineage.get("deleted", []):
            print(f"     delete LSN {doomed.get('lsn'):>12}  {', '.join(doomed.get('causes', []))}")


def print_summary(demo: Demo) -> None:
    print("\nlineage      snapshots (newest first)")
    for row in demo.report.rows:
        print(f"{row[0]:<12} {' '.join(row[1:])}")
    print("\nstep timings")
    for name, seconds in demo.report.timings:
        print(f"  {seconds:7.1f}s  {name}")
    passed = len(demo.report.checks) - len(demo.report.failed)
    print(f"\n{passed} of {len(demo.report.checks)} checks passed")


def main(argv: list[str] | None = None, *, spark: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("demo-data"), help="demo folder (wiped)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1_000_000, help="initial changelog records")
    args = parser.parse_args(argv)
    if args.partitions < 1 or args.rows < 8 * args.partitions:
        parser.error("need --partitions >= 1 and --rows >= 8 per partition")
    shutil.rmtree(args.root, ignore_errors=True)
    per_round_per_partition = args.rows // 4 // args.partitions
    thresholds = CompactionConfig(
        default=CompactionThresholds(records=max(1, per_round_per_partition * 3 // 4), bytes=2**62)
    )
    spark_log = args.root.resolve() / "spark.log"
    runner = LocalSparkRunner(spark=spark, log_file=spark_log)
    local = LocalRuntime(
        home=args.root.resolve(), in_memory=True, thresholds=thresholds, runner=runner
    )
    print("starting DynamoDB Local and the local runtime...", flush=True)
    if spark is None:
        print(f"   Spark's own log goes to {spark_log} (errors only here)", flush=True)
    demo: Demo | None = None
    try:
        with local as runtime:
            router = Router(runtime.store, HANDLERS)
            runner.bind(router)
            demo = Demo(args.root, args.partitions, args.rows, local, runner, router)
            run_scenario(demo)
            stream_snapshot(demo)
            draw_pictures(demo)
            demo.latest_ids = {
                p: str(demo.head(p).get("latest_snapshot_id")) for p in range(demo.partitions)
            }
        bootstrap_from_the_bucket(demo)  # DynamoDB Local and the functions are stopped
        print_summary(demo)
    except KeyboardInterrupt:
        print("\ninterrupted: DynamoDB Local and Spark stopped", file=sys.stderr)
        return 130
    if demo is None or demo.report.failed:
        failed = demo.report.failed if demo else ["the demo did not start"]
        print(f"FAILED checks: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
