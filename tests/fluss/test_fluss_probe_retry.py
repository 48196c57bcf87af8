"""The client program's read-only and idempotent commands are asked again when its
connection to a server dropped; another write is never repeated."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from snapledger.local import fluss_probe
from snapledger.local.fluss_probe import FlussProbe, FlussProbeError

DROPPED = "NetworkException: DisconnectException: Cannot send request to server cs-0"
#: What a read printed in CI right after a tablet server's restart (the bucket's leader not
#: taken back yet).
NO_LEADER = (
    "Caused by: com.alibaba.fluss.exception.FlussRuntimeException: Leader not found after retry"
    "  5 times for table bucket: TableBucket{tableId=1, bucket=2}"
)


def _runs(monkeypatch: pytest.MonkeyPatch, answers: list[tuple[int, str, str]]) -> list[Any]:
    calls: list[Any] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        code, out, err = answers[len(calls) - 1]
        return subprocess.CompletedProcess(argv, code, out, err)

    monkeypatch.setattr(fluss_probe.subprocess, "run", run)
    monkeypatch.setattr(fluss_probe.time, "sleep", lambda _s: None)
    return calls


def _probe() -> FlussProbe:
    return FlussProbe("127.0.0.1:1", "probe.t", jar=Path(__file__))


def test_a_read_that_lost_its_connection_is_asked_again(monkeypatch: pytest.MonkeyPatch):
    calls = _runs(monkeypatch, [(1, "", DROPPED), (0, '{"bucket": 0, "offset": 7}\n', "")])
    assert _probe().offsets() == {0: 7}
    assert len(calls) == 2


def test_a_read_before_a_restarted_server_leads_its_buckets_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
):
    calls = _runs(
        monkeypatch,
        [(1, "", NO_LEADER), (1, "", NO_LEADER), (0, '{"bucket": 2, "offset": 9}\n', "")],
    )
    assert _probe().offsets() == {2: 9}
    assert len(calls) == 3


def test_a_read_failing_otherwise_or_too_often_is_an_error(monkeypatch: pytest.MonkeyPatch):
    calls = _runs(monkeypatch, [(1, "", DROPPED)] * fluss_probe.READ_ATTEMPTS)
    with pytest.raises(FlussProbeError, match="offsets failed"):
        _probe().offsets()
    assert len(calls) == fluss_probe.READ_ATTEMPTS
    calls = _runs(monkeypatch, [(1, "", "table does not exist")])
    with pytest.raises(FlussProbeError):
        _probe().offsets()
    assert len(calls) == 1


def test_an_upsert_or_delete_that_lost_its_connection_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
):
    # the same rows at the same version, the same ids: the table ends the same
    calls = _runs(monkeypatch, [(1, "", DROPPED), (0, '{"upserted": 5}\n', "")])
    assert _probe().upsert(0, 5, version=2) == 5
    assert len(calls) == 2
    calls = _runs(monkeypatch, [(1, "", DROPPED), (0, '{"deleted": 1}\n', "")])
    assert _probe().delete(0, 1) == 1
    assert len(calls) == 2


@pytest.mark.parametrize("command", ["create", "write", "undo"])
def test_another_write_that_lost_its_connection_is_not_repeated(
    monkeypatch: pytest.MonkeyPatch, command: str
):
    calls = _runs(monkeypatch, [(1, "", DROPPED), (0, "{}\n", "")])
    with pytest.raises(FlussProbeError, match=f"{command} failed"):
        _probe().run(command)
    assert len(calls) == 1
