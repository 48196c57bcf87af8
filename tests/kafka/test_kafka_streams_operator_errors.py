"""What an operator meets from ``snapledger kafka-streams`` around the brokers
(docs/kafka-streams.md, "Exit status and errors"): the application's very first start (no
changelog yet: nothing to seed, exit 0), a broker out of reach (one line within
``--broker-timeout``, no librdkafka log, exit 2), told apart from a topic the broker says does
not exist, and the state refusing (exit 1). The console script runs in its own process, where
librdkafka would write to the real stderr; the broker is the session's (marker ``kafka``)."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from snapledger.kafka_streams.changelog import (
    BrokerUnreachableError,
    ChangelogMissingError,
    describe_changelog,
)
from snapledger.kafka_streams.schedule import SnapshotSchedule
from snapledger.kafka_streams.sidecar import SnapshotSidecar
from snapledger.kafka_streams.snapshotter import StoreSnapshotter
from snapledger.local import kafka_topics
from snapledger.local.kafka_broker import KafkaBroker
from tests.cli.support import run_cli
from tests.kafka.generation_members import NO_BROKER

STORE = ["--store", "totals"]
#: The old behaviour took 31 s to decide (librdkafka's 30 s request timeout): any bound well
#: under it and over a loaded machine's process start proves the timeout is the one given.
DECIDED_WITHIN_S = 20.0


def snapledger(*argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """The installed CLI in its own process, and how long it ran (seconds)."""
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "snapledger.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return ran, time.monotonic() - started


def one_line(err: str) -> str:
    """stderr's only line: no traceback, no librdkafka log (``%3|...|FAIL|rdkafka#...``)."""
    assert "Traceback" not in err and "rdkafka" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _root(tmp_path: Path) -> list[str]:
    return ["--root", (tmp_path / "root").as_uri()]


@pytest.mark.parametrize(
    ("command", "more"),
    [("seed", ["--state-dir", "STATE"]), ("snapshot", []), ("generation", [])],
)
def test_an_unreachable_broker_is_one_line_within_the_timeout(
    command: str, more: list[str], tmp_path: Path
):
    # Given no broker at the address (a closed loopback port)
    more = [str(tmp_path / "state") if m == "STATE" else m for m in more]
    argv = ["kafka-streams", command, "--bootstrap-servers", NO_BROKER, "--application-id", "a"]

    # When the command runs with a 1 s broker timeout
    ran, took = snapledger(*argv, *STORE, *_root(tmp_path), "--broker-timeout", "1", *more)

    # Then: one line with the reason and what to check, exit 2, decided within the bound
    assert ran.returncode == 2, ran.stderr
    assert one_line(ran.stderr) == (
        f"snapledger: no Kafka broker answered at {NO_BROKER} within 1 s: is "
        "--bootstrap-servers right and the broker up? (--broker-timeout waits longer)"
    )
    assert ran.stdout == ""
    assert took < DECIDED_WITHIN_S


def test_the_default_broker_timeout_is_5_seconds(tmp_path: Path):
    ran, took = snapledger(
        "kafka-streams", "seed", "--bootstrap-servers", NO_BROKER, "--application-id", "a",
        *STORE, *_root(tmp_path), "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert f"no Kafka broker answered at {NO_BROKER} within 5 s" in one_line(ran.stderr)
    assert 5 <= took < 5 + DECIDED_WITHIN_S


def test_the_sidecar_waits_out_an_unreachable_broker(tmp_path: Path, caplog):
    # Given a sidecar started with no broker at the address, on a thread of its own
    snapshotter = StoreSnapshotter(
        None,  # type: ignore[arg-type]  # no registry call comes before the broker's answer
        (tmp_path / "root").as_uri(),
        NO_BROKER,
        "a",
        "totals",
        broker_timeout_s=0.5,
    )
    sidecar = SnapshotSidecar(snapshotter, SnapshotSchedule(every_records=1), poll_seconds=0.1)
    thread = threading.Thread(target=sidecar.run, daemon=True)
    with caplog.at_level("ERROR", logger="snapledger.kafka_streams.sidecar"):
        thread.start()
        time.sleep(2)
        # Then it is still running, and said why it waits at each try
        assert thread.is_alive()
        sidecar.stop()
        thread.join(timeout=10)
    assert not thread.is_alive()
    waited = [r.getMessage() for r in caplog.records if "waiting for the changelog" in r.message]
    assert len(waited) >= 2
    assert waited[0] == (
        f"waiting for the changelog (looked for again next poll): no Kafka broker answered at "
        f"{NO_BROKER} within 0.5 s: is --bootstrap-servers right and the broker up? "
        "(--broker-timeout waits longer)"
    )


@pytest.mark.kafka
def test_the_broker_tells_a_missing_topic_from_no_broker(kafka_broker: KafkaBroker):
    servers = kafka_broker.bootstrap_servers
    kafka_topics.create_topics(servers, ["ops-1-totals-changelog"], partitions=2)

    # The broker answers UNKNOWN_TOPIC_OR_PART for a topic not created yet
    with pytest.raises(ChangelogMissingError) as missing:
        describe_changelog(servers, "ops-0-totals-changelog", timeout_s=5)
    assert str(missing.value) == (
        f"topic 'ops-0-totals-changelog' does not exist at {servers}: the application creates "
        "its changelog when it first starts (if it has, check --application-id and --store)"
    )
    # No broker answers at a closed port: another error, not "missing"
    with pytest.raises(BrokerUnreachableError):
        describe_changelog(NO_BROKER, "ops-0-totals-changelog", timeout_s=1)
    # and a topic that exists is read
    assert sorted(describe_changelog(servers, "ops-1-totals-changelog").partitions) == [0, 1]


@pytest.mark.kafka
def test_seed_before_the_first_start_has_nothing_to_seed(kafka_broker: KafkaBroker, tmp_path):
    # Given a broker without the store's changelog (the application never started)
    state = tmp_path / "state"
    argv = ["kafka-streams", "seed", "--bootstrap-servers", kafka_broker.bootstrap_servers]
    argv += ["--application-id", "ops-first", *STORE, *_root(tmp_path), "--state-dir", str(state)]
    topic = "ops-first-totals-changelog"

    # When every task is asked for: one line for the store, naming the topic, exit 0
    ran = run_cli(*argv)
    assert ran.status == 0, ran.err
    assert ran.out.splitlines() == [
        f"{topic}: no changelog yet ({topic} does not exist: the application creates it when "
        "it first starts); nothing to seed"
    ]
    assert ran.err == ""
    assert run_cli(*argv, "--json").json() == {
        "task": "all", "outcome": "no-changelog", "snapshot_id": None, "lsn": None, "skipped": [],
    }  # fmt: skip

    # When tasks are named: one line each (--json: the fields)
    ran = run_cli(*argv, "--tasks", "0_0,0_3")
    assert ran.status == 0, ran.err
    assert ran.out.splitlines() == [
        f"{t}: no changelog yet ({topic} does not exist: the application creates it when it "
        "first starts); nothing to seed"
        for t in ("0_0", "0_3")
    ]
    ran = run_cli(*argv, "--tasks", "0_0,0_3", "--json")
    assert [json.loads(line) for line in ran.out.splitlines()] == [
        {"task": t, "outcome": "no-changelog", "snapshot_id": None, "lsn": None, "skipped": []}
        for t in ("0_0", "0_3")
    ]
    # Nothing was placed: the application folder holds only the lock the seed took
    assert [p.name for p in (state / "ops-first").iterdir()] == [".lock"]


@pytest.mark.kafka
def test_seed_beside_a_running_instance_is_refused_by_the_state(
    kafka_broker: KafkaBroker, tmp_path: Path
):
    # Given the state directory's lock held, as a running instance holds it
    app_dir = tmp_path / "state" / "ops-locked"
    app_dir.mkdir(parents=True)
    argv = ["kafka-streams", "seed", "--bootstrap-servers", kafka_broker.bootstrap_servers]
    argv += ["--application-id", "ops-locked", *STORE, *_root(tmp_path)]
    with (app_dir / ".lock").open("a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        ran, _ = snapledger(*argv, "--state-dir", str(tmp_path / "state"))

    # Then: refused by the state (exit 1), one line saying what to do
    assert ran.returncode == 1, ran.stderr
    assert one_line(ran.stderr) == (
        f"snapledger: {app_dir / '.lock'} is locked: a Kafka Streams instance (or another seed) "
        "uses this state directory; seed before the application starts, one seed at a time"
    )


@pytest.mark.kafka
def test_a_snapshot_of_a_store_without_changelog_is_refused_by_the_state(
    kafka_broker: KafkaBroker, tmp_path: Path
):
    servers = kafka_broker.bootstrap_servers
    argv = ["kafka-streams", "snapshot", "--bootstrap-servers", servers]
    ran, _ = snapledger(*argv, "--application-id", "ops-none", *STORE, *_root(tmp_path))
    assert ran.returncode == 1, ran.stderr
    assert one_line(ran.stderr) == (
        f"snapledger: topic 'ops-none-totals-changelog' does not exist at {servers}: the "
        "application creates its changelog when it first starts (if it has, check "
        "--application-id and --store)"
    )
