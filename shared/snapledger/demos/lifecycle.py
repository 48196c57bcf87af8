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
from pathlib import Path
from typing import Any

from snapledger.demos.restore import (
    bootstrap_from_the_bucket,
    restore_and_compare,
    stream_snapshot,
)
from snapledger.demos.session import STREAM, Demo
from snapledger.limits import MAX_COUNT
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.router import Router
from snapledger.local.runtime import LocalRuntime
from snapledger.local.spark_runner import LocalSparkRunner
from snapledger.settings import ENV_COMPACTION_BYTES, ENV_COMPACTION_RECORDS


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
    thresholds = {  # compaction by records only: the bytes threshold never reached
        ENV_COMPACTION_RECORDS: str(max(1, per_round_per_partition * 3 // 4)),
        ENV_COMPACTION_BYTES: str(MAX_COUNT),
    }
    spark_log = args.root.resolve() / "spark.log"
    runner = LocalSparkRunner(spark=spark, log_file=spark_log)
    local = LocalRuntime(
        home=args.root.resolve(), in_memory=True, settings=thresholds, runner=runner
    )
    print("starting DynamoDB Local and the local runtime...", flush=True)
    if spark is None:
        print(f"   Spark's own log goes to {spark_log} (errors only here)", flush=True)
    demo: Demo | None = None
    try:
        with local as runtime:
            router = Router(runtime.store, HANDLERS, runtime.layouts)
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
