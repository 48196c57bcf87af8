"""The restore steps of ``make demo``: restore each partition (5), snapshot and restore the
whole stream (6), each compared with a full replay; and with the functions and the table
stopped, bootstrap from ``latest.json`` alone (8)."""

from __future__ import annotations

from typing import Any

from snapledger.demos.session import STREAM, Demo
from snapledger.local.handlers import invoke
from snapledger.local.replay import check_restore_equals_replay


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
