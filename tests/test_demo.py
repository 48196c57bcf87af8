"""The demo's scenario runs in the suite at a small size; every check it prints must pass."""

from __future__ import annotations

import re
import time

import pytest

from snapledger.demos import lifecycle as demo
from snapledger.demos import report as demo_report
from snapledger.demos import restore as demo_restore

pytestmark = [pytest.mark.ddblocal, pytest.mark.spark, pytest.mark.slow]


def test_demo_scenario_passes_every_check(tmp_path, capsys, spark):
    status = demo.main(
        ["--root", str(tmp_path / "demo"), "--partitions", "2", "--rows", "4000"], spark=spark
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "[FAIL]" not in out
    passed, total = map(int, re.search(r"(\d+) of (\d+) checks passed", out).groups())
    # 2 per-partition checks after bootstrap, 2 rounds, GC and 2 restores per partition
    assert passed == total >= 20
    assert "equals full replay" in out and "latest advanced" in out
    assert out.count("latest.json names the ledger's latest and reads back") == 2
    # a stream snapshot: requested, completed by both partitions, the stream restored to it
    assert "generation 1 COMPLETED by all 2 partitions" in out
    assert out.count("stream restore from generation 1") == 2
    # the pictures, written where it says
    timeline = tmp_path / "demo" / "timeline-orders-0.html"
    assert f"timeline of orders/0 drawn - {timeline.resolve()}" in out or str(timeline) in out
    assert timeline.read_text().count('class="snapshot') >= 2
    assert 'class="plan-keep"' in (tmp_path / "demo" / "gc-plan.svg").read_text()
    # one readable line per fact: no function's answer printed as a raw dict
    raw = [line for line in out.splitlines() if "{'" in line or "'ok': True" in line]
    assert raw == [], raw[:3]


def test_an_answer_reads_as_one_line_of_facts():
    answer = {"ok": True, "status": "REQUESTED", "generation": 3, "job_id": "j-1", "x": {"y": 1}}
    line = demo_restore._outcome({**answer, "partitions": [{"partition": 0}, {"partition": 1}]})
    assert line == "status REQUESTED, job_id j-1, generation 3, 2 partitions"
    assert demo_restore._outcome({"ok": False, "error": "no such stream"}) == "error no such stream"


def test_a_long_step_says_it_is_still_working(capsys):
    report = demo_report.Report(heartbeat_seconds=0.05)
    with report.step("3.1 a quiet step"):
        time.sleep(0.3)
    out = capsys.readouterr().out
    assert "... still working on step 3 (" in out
    assert out.count("still working") >= 2


def test_the_gc_plan_names_each_partition_and_each_reason(capsys):
    lineages = [
        {
            "stream": "orders",
            "partition": 1,
            "kept": [{"lsn": 20, "reasons": ["latest", "newest"]}],
            "deleted": [{"lsn": 10, "causes": ["unprotected"]}],
        }
    ]
    demo._print_plan({"report": {"lineages": lineages}})
    out = capsys.readouterr().out
    assert "orders/1:" in out and "None" not in out
    assert "latest, newest" in out and "unprotected" in out


def test_spark_logs_to_a_file_with_only_errors_on_the_console(tmp_path):
    from snapledger.local.spark_runner import LOG4J2_TO_FILE

    config = LOG4J2_TO_FILE.format(path=tmp_path / "spark.log")
    assert f"appender.file.fileName = {tmp_path / 'spark.log'}" in config
    assert "appender.console.filter.threshold.level = error" in config
    assert "%d{yy/MM/dd HH:mm:ss}" in config  # the braces survive the format
    # the gateway's logger at the root's level: no "Setting default log level" on the console
    assert "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer" in config
    assert "logger.gateway.level = info" in config and "rootLogger.level = info" in config
