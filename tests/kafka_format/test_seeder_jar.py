"""The Kafka Streams seeder (kafka/seeder, built by ``make setup``) through its jar: a task
folder seeded from a record stream and dumped back with Kafka Streams 4.4.0's own classes,
and each refusal. The unchanged application reading the folder is SeedBootTest (JUnit,
TopologyTestDriver), run here by ``test_the_java_suite_passes``."""

from __future__ import annotations

import fcntl
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from snapledger.kafka_streams.seed_format import (
    SeedRecord,
    changelog_topic,
    encode_records,
    parse_checkpoint,
    parse_task_id,
    task_folder,
)

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]
SEEDER = REPO / "kafka" / "seeder"
JAR = SEEDER / "target" / "kafka-seeder.jar"
APP = "totals-app"


@pytest.fixture(scope="module")
def jar() -> Path:
    if shutil.which("java") is None:
        pytest.fail("java is not on PATH: the seeder needs Java 17")
    if not JAR.exists():
        pytest.fail(f"{JAR} is missing: run `make setup` (it builds the seeder with Maven)")
    return JAR


def run(jar: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["java", "-jar", str(jar), *args],
        check=False,
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def seed_args(state: Path, *extra: str) -> list[str]:
    return ["seed", "--state-dir", str(state), "--application-id", APP, "--task", "0_3",
            "--store", "totals", "--offset", "41", *extra]  # fmt: skip


def long_bytes(n: int) -> bytes:
    return struct.pack(">q", n)


RECORDS = [
    SeedRecord(b"a", long_bytes(1), 10),
    SeedRecord(b"b", long_bytes(2), 20),
    SeedRecord(b"a", long_bytes(3), 30),  # overwrites a
    SeedRecord(b"c", long_bytes(9), 5),
    SeedRecord(b"c", None, 40),  # deletes c
    SeedRecord(b"e", b"", 50),  # an empty value is a value, not a tombstone
]


def test_seed_then_dump_shows_the_last_value_of_each_live_key(jar, tmp_path):
    # Given records with an overwritten key and a tombstone
    done = run(
        jar, *seed_args(tmp_path, "--legacy-checkpoint", "true"), stdin=encode_records(RECORDS)
    )
    assert done.returncode == 0, done.stderr.decode()
    folder = task_folder(tmp_path, APP, parse_task_id("0_3"))
    assert "6 records (1 tombstones)" in done.stdout.decode()
    # Then the folder holds the store and the legacy checkpoint, nothing half-written beside it
    assert (folder / "rocksdb" / "totals" / "CURRENT").exists()
    topic = changelog_topic(APP, "totals")
    assert parse_checkpoint((folder / ".checkpoint").read_text()) == {(topic, 3): 41}
    assert sorted(p.name for p in (tmp_path / APP).iterdir()) == [".lock", "0_3"]
    # When dumped with Kafka Streams' store classes
    dumped = run(jar, "dump", "--state-dir", str(tmp_path), "--application-id", APP,
                 "--task", "0_3", "--store", "totals")  # fmt: skip
    assert dumped.returncode == 0, dumped.stderr.decode()
    # Then: the checkpoint file, the offset committed in the store, each live key's last value
    # with its record timestamp, in key order
    assert dumped.stdout.decode().splitlines() == [
        f"checkpoint-file {topic} 3 41",
        f"store-offset {topic} 3 41",
        f"entry 61 {long_bytes(3).hex()} 30",
        f"entry 62 {long_bytes(2).hex()} 20",
        "entry 65  50",
    ]


def test_a_plain_store_keeps_values_without_timestamps(jar, tmp_path):
    done = run(jar, *seed_args(tmp_path, "--timestamped", "false"), stdin=encode_records(RECORDS))
    assert done.returncode == 0, done.stderr.decode()
    dump = ["dump", "--state-dir", str(tmp_path), "--application-id", APP, "--task", "0_3",
            "--store", "totals"]  # fmt: skip
    lines = run(jar, *dump, "--timestamped", "false").stdout.decode().splitlines()
    assert lines[0] == "checkpoint-file absent"
    assert lines[2:] == [
        f"entry 61 {long_bytes(3).hex()} -",
        f"entry 62 {long_bytes(2).hex()} -",
        "entry 65  -",
    ]
    # Opened as timestamped, Kafka Streams takes it for a pre-2.3 store (upgrade mode): the
    # values come back with timestamp -1, so a seed must match the application's store kind
    upgraded = run(jar, *dump, "--timestamped", "true").stdout.decode().splitlines()
    assert upgraded[2] == f"entry 61 {long_bytes(3).hex()} -1"


def test_a_non_empty_task_folder_is_refused_and_left_alone(jar, tmp_path):
    folder = tmp_path / APP / "0_3"
    folder.mkdir(parents=True)
    (folder / "mine").write_text("keep")
    done = run(jar, *seed_args(tmp_path), stdin=encode_records(RECORDS))
    assert done.returncode == 2
    assert "the task folder is not empty (1 entries, e.g. mine)" in done.stderr.decode()
    assert [p.name for p in folder.iterdir()] == ["mine"]


def test_an_empty_task_folder_is_filled(jar, tmp_path):
    (tmp_path / APP / "0_3").mkdir(parents=True)
    done = run(jar, *seed_args(tmp_path), stdin=encode_records(RECORDS))
    assert done.returncode == 0, done.stderr.decode()


def test_a_truncated_stream_writes_nothing(jar, tmp_path):
    done = run(jar, *seed_args(tmp_path), stdin=encode_records(RECORDS)[:-3])
    assert done.returncode == 2
    assert "record 5 (counting from 0): the input ends inside the record" in done.stderr.decode()
    assert sorted(p.name for p in (tmp_path / APP).iterdir()) == [".lock"]


def test_a_running_instance_s_lock_is_respected(jar, tmp_path):
    (tmp_path / APP).mkdir()
    with (tmp_path / APP / ".lock").open("w") as held:
        fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run(jar, *seed_args(tmp_path), stdin=encode_records(RECORDS))
    assert done.returncode == 2
    assert "is locked: a Kafka Streams instance" in done.stderr.decode()
    assert not (tmp_path / APP / "0_3").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "0-3"], "--task 0-3: a task is {subtopology}_{partition}"),
        (["--partition", "4"], "--partition 4 but --task 0_3"),
        (["--offset", "-1"], "--offset -1"),
        (["--store", ".check"], "--store .check: not a store name"),
        (["--timestamped", "yes"], "--timestamped yes: give true or false"),
        (["--color", "red"], "unknown option --color"),
    ],
)
def test_bad_arguments_are_refused_naming_them(jar, tmp_path, args, message):
    base = seed_args(tmp_path)
    for name, value in zip(args[::2], args[1::2], strict=True):
        if name in base:
            base[base.index(name) + 1] = value
        else:
            base += [name, value]
    done = run(jar, *base, stdin=encode_records(RECORDS))
    assert done.returncode == 2
    assert message in done.stderr.decode()


@pytest.mark.slow
def test_the_java_suite_passes():
    # SeedBootTest: TopologyTestDriver (exactly_once_v2) runs the unchanged aggregation on the
    # seeded folder and serves the seeded values; the legacy .checkpoint is migrated.
    done = subprocess.run(
        ["mvn", "-q", "-f", str(SEEDER / "pom.xml"), "test"],
        check=False,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout.decode()[-4000:]
