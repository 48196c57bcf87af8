"""``snapledger producer-offsets register|get|delete`` with the functions in-process (the
launch and query functions' producer-offsets payloads), and the client's calls under it."""

from __future__ import annotations

import pytest

from snapledger.client.control import RequestRefusedError, Snapledger
from snapledger.client.producer_offsets_actions import offsets_of
from tests.cli.conftest import InProcess
from tests.cli.support import run_cli


def run(*argv):
    return run_cli("--local", *argv)


def test_register_get_and_delete(rt):
    offsets = ["--offset", "3/0=952", "--offset", "3/1=1045", "--offset", "4/7/0=12"]
    created = run(
        "--json", "producer-offsets", "register", "job-1", *offsets, "--ttl-seconds", "600"
    )
    assert created.status == 0, created
    assert created.json()["result"] == "CREATED"
    again = run("--json", "producer-offsets", "register", "job-1", "--offset", "3/0=1")
    assert again.json()["result"] == "ALREADY_EXISTS"
    got = run("--json", "producer-offsets", "get", "job-1")
    assert got.status == 0 and offsets_of(got.json()["entry"]) == {
        (3, None, 0): 952,
        (3, None, 1): 1045,
        (4, 7, 0): 12,
    }
    shown = run("producer-offsets", "get", "job-1")  # a table, not JSON
    assert shown.status == 0 and "1045" in shown.out
    assert run("--json", "producer-offsets", "delete", "job-1").json()["deleted"] is True
    assert run("--json", "producer-offsets", "get", "job-1").json()["found"] is False


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["register", "job-1"], "Missing option '--offset'"),
        (["register", "job-1", "--offset", "3:0=952"], "is not TABLE/BUCKET=OFFSET"),
        (["register", "job-1", "--offset", "3/0=-1"], "is not TABLE/BUCKET=OFFSET"),
        (["register", "job-1", "--offset", "3/0=1", "--offset", "3/0=2"], "given twice"),
        (["register", "job-1", "--offset", "3/0=1", "--ttl-seconds", "0"], "--ttl-seconds"),
        (["register", "job-1", "--offset", "3/0=1", "--ttl-seconds", "2592001"], "--ttl-seconds"),
        (["get", "job/1"], "is not a producer id"),
        (["get", "j" * 129], "at most 128"),
    ],
)
def test_bad_arguments_exit_2_naming_them(rt, argv, says):
    ran = run("producer-offsets", *argv)
    assert ran.status == 2, ran
    assert says in ran.err, ran.err


def test_the_client_raises_the_functions_refusal_naming_the_field(rt):
    client = Snapledger(InProcess())
    assert client.register_producer_offsets("job-2", {(3, 0): 5})["result"] == "CREATED"
    with pytest.raises(RequestRefusedError, match="offsets: List should have at least 1 item"):
        client.register_producer_offsets("job-3", {})
    assert client.producer_offsets("job-2")["found"] is True
    assert client.delete_producer_offsets("job-2")["deleted"] is True
