"""``snapledger local up`` and every ``--local`` command apply the layout map the deployed
functions would: ``SNAPLEDGER_LAYOUTS`` (and the deprecated per-layout variables read into
it) from the environment, ``local up``'s ``--layout`` (and the deprecated shorthands),
and, in a process attaching to a running ``local up``, the map its ``runtime.json`` holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.cli import main as cli
from snapledger.errors import InvalidRequestError
from snapledger.layouts.layout_map import layout_map
from snapledger.local import layout_settings
from snapledger.local.layout_settings import parse_layout_options
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime
from snapledger.settings import ENV_KAFKA_STREAMS_STREAMS, ENV_LAYOUTS
from tests.cli.test_local_up import wait_for
from tests.local.test_runtimes_decide_alike import RETENTION_MS, kafka_streams_snapshot

#: One changelog named by ``local up``'s option, one by the environment it runs in.
BY_OPTION = "totals-app-totals-changelog"
BY_ENVIRONMENT = "orders-app-counts-changelog"


@pytest.mark.parametrize(
    ("arguments", "environ", "says"),
    [
        (["--kafka-streams-stream", "orders"], {}, "not a changelog topic's name"),
        (["--layout", "orders=kafka-streams"], {}, "--layout: entry 'orders': field 'key'"),
        (["--layout", "orders=fluss"], {}, "field 'layout': unknown layout 'fluss'"),
        (["--layout", "orders"], {}, "give KEY=LAYOUT or PREFIX=LAYOUT:STREAM"),
        (["--layout", "restate/a=restate:payments"], {}, "needs --s3-port"),
        ([], {ENV_KAFKA_STREAMS_STREAMS: "orders-changelog"}, ENV_KAFKA_STREAMS_STREAMS),
        ([], {ENV_KAFKA_STREAMS_STREAMS: '["a/b"]'}, "entry 'a/b': field 'key'"),
        ([], {ENV_LAYOUTS: '{"x": {"layout": "restate"}}'}, "entry 'x': field 'stream'"),
        (
            ["--layout", f"{BY_OPTION}=kafka-streams"],
            {ENV_LAYOUTS: json.dumps({BY_OPTION: "native"})},
            f"entry {BY_OPTION!r} is",
        ),
        ([], {"SNAPLEDGER_DEFAULT_MIN_COUNT": "-1"}, "min_count must be at least 1 (got -1)"),
    ],
)
def test_unusable_settings_are_refused_in_one_line_before_anything_starts(
    arguments, environ, says, tmp_path, capsys, monkeypatch
):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    status = cli.main(["--home", str(tmp_path / "home"), "local", "up", *arguments])
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert any(says in line for line in err) and len(err) <= 2, err  # (and "stopped")
    assert not (tmp_path / "home" / RUNTIME_FILE).exists()
    assert not (tmp_path / "home" / "dynamodb").exists()  # DynamoDB Local never started


def test_the_environment_and_local_ups_layouts_are_joined_and_checked():
    environment = layout_map(
        {"restate/a": {"layout": "restate", "stream": "payments"}, BY_ENVIRONMENT: "kafka-streams"}
    )
    options = parse_layout_options(
        [f"{BY_OPTION}=kafka-streams", f"{BY_ENVIRONMENT}=kafka-streams"]
    )
    joined = environment.joined(options, source="options")
    assert [(e.key, e.layout, e.stream) for e in joined.entries] == [
        (BY_ENVIRONMENT, "kafka-streams", BY_ENVIRONMENT),
        ("restate/a", "restate", "payments"),
        (BY_OPTION, "kafka-streams", BY_OPTION),
    ]
    file = layout_settings.runtime_file(joined)
    assert layout_settings.from_runtime_file(json.loads(json.dumps(file))) == joined
    # an older local up's runtime.json (the per-layout fields) still reads
    old = {"restate_prefixes": {"restate/a": "payments"}, "kafka_streams_streams": [BY_OPTION]}
    assert layout_settings.from_runtime_file(old) == layout_map(
        {"restate/a": {"layout": "restate", "stream": "payments"}, BY_OPTION: "kafka-streams"}
    )
    assert layout_map(json.loads(layout_settings.environment(joined)[ENV_LAYOUTS])) == joined
    with pytest.raises(InvalidRequestError, match=r"entry 'restate/a' is .* there but"):
        environment.joined(
            parse_layout_options(["restate/a=restate:orders"]), source="runtime.json"
        )
    with pytest.raises(InvalidRequestError, match="stream 'payments' is also entry"):
        environment.joined(parse_layout_options(["restate/b=restate:payments"]), source="options")


@pytest.fixture
def local_up(tmp_path: Any) -> Iterator[tuple[Any, Any]]:
    """``local up --layout BY_OPTION=kafka-streams`` run with BY_ENVIRONMENT in its
    environment (the deprecated variable, read into the map): (its home, its log)."""
    home, log_path = tmp_path / "home", tmp_path / "up.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "snapledger.cli.main", "--home", str(home), "local", "up"),
            *("--poll-seconds", "0.2", "--layout", f"{BY_OPTION}=kafka-streams"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            ENV_KAFKA_STREAMS_STREAMS: json.dumps([BY_ENVIRONMENT]),
        },
    )
    try:
        assert wait_for((home / RUNTIME_FILE).exists, 120), log_path.read_text()
        yield home, log_path
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=60)
        log.close()
    assert status == 0


def _unrestorable(plan: Any) -> set[int]:
    """The LSNs a GC plan (any part of it) marks unrestorable."""
    if isinstance(plan, dict):
        found = {plan["lsn"]} if plan.get("unrestorable") and "lsn" in plan else set()
        return found.union(*(_unrestorable(value) for value in plan.values()))
    if isinstance(plan, list):
        return set().union(*(_unrestorable(value) for value in plan))
    return set()


@pytest.mark.ddblocal
@pytest.mark.slow
def test_local_up_and_the_local_commands_apply_the_kafka_streams_layout(
    local_up, capsys, monkeypatch
):
    home, log_path = local_up
    # Given local up started with one changelog as an option and one in its environment:
    # runtime.json names both, and it said so
    info = json.loads((home / RUNTIME_FILE).read_text())
    assert info["layouts"] == {t: {"layout": "kafka-streams"} for t in (BY_ENVIRONMENT, BY_OPTION)}
    said = f"stream {BY_OPTION}: snapshots checked by the kafka-streams layout"
    assert wait_for(lambda: said in log_path.read_text()), log_path.read_text()
    # When snapshots are dropped under its root: one whose offsets are not its own, and
    # a history the changelog can no longer continue the two oldest of
    store = FileObjectStore(home / "root")
    bad = kafka_streams_snapshot(store, 3, 41, topic=BY_OPTION, offsets={f"{BY_OPTION}-3": 40})
    for lsn, start in ((10, 0), (20, 0), (30, 0), (50, 31)):
        changelog = {
            "log_start_offset": start,
            "end_offset": lsn + 1,
            "delete_retention_ms": RETENTION_MS,
        }
        kafka_streams_snapshot(store, 2, lsn, topic=BY_ENVIRONMENT, changelog=changelog)
    # Then local up's router registered them through the kafka-streams strategy: the bad
    # one rejected, saying which layout checked it
    assert wait_for(lambda: log_path.read_text().count('"outcome": "became_latest"') >= 4, 60)
    [answer] = [line for line in log_path.read_text().splitlines() if bad in line]
    assert '"outcome": "rejected"' in answer and '"layout": "kafka-streams"' in answer, answer
    assert "not exactly" in answer, answer
    # And a --local command (a process of its own environment, without the variables)
    # plans GC with the layout's retention horizon: the two oldest marked unrestorable
    monkeypatch.delenv(ENV_KAFKA_STREAMS_STREAMS, raising=False)
    capsys.readouterr()
    assert cli.main(["--local", "--home", str(home), "--json", "gc", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert _unrestorable(plan) == {10, 20}, plan
    # And any process attaching to it applies both layouts
    with LocalRuntime(home=home) as attached:
        assert attached.layouts.for_stream(BY_OPTION).name == "kafka-streams"
        assert attached.layouts.for_stream(BY_ENVIRONMENT).name == "kafka-streams"
