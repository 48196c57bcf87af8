"""A function whose role lacks a permission says which action on which resource was
refused, in its answer and its log, instead of a stack trace (issue 13, bad input)."""

from __future__ import annotations

import logging

import pytest

from snapledger.errors import AccessDeniedError
from tests.deployed.conftest import Deployed
from tests.deployed.deployment import BUCKET, TABLE
from tests.deployed.scenario import STREAM, _s3_event
from tests.support import write_snapshot

pytestmark = pytest.mark.slow


def test_a_console_answer_names_the_refused_action_and_resource(
    deployed: Deployed, caplog: pytest.LogCaptureFixture
) -> None:
    # Given query's role without dynamodb:Query (a deployment mistake)
    deployed.app.withdraw("query", "dynamodb:Query")
    mark = len(deployed.iam.decisions)
    try:
        # When an operator lists a lineage from the console
        with caplog.at_level(logging.ERROR):
            answer = deployed.app.invoke(
                "query", {"action": "list", "stream": STREAM, "partition": 3}
            )
    finally:
        del deployed.iam.decisions[mark:]
    # Then the answer and the log name the action and the table, and what to do
    assert answer["ok"] is False and answer["error"] == "access_denied"
    assert answer["action"] == "dynamodb:Query"
    assert TABLE in answer["resource"]
    assert "Grant it to the role" in answer["message"]
    assert any("dynamodb:Query" in r.getMessage() for r in caplog.records)


def test_an_event_the_role_cannot_process_fails_naming_the_object(deployed: Deployed) -> None:
    # Given register's role without s3:GetObject
    deployed.app.withdraw("register", "s3:GetObject")
    key = write_snapshot(deployed.app.store, STREAM, 5, 100)
    mark = len(deployed.iam.decisions)
    try:
        # When a manifest arrives, Then the delivery fails (Lambda retries it, then keeps it
        # in the failure queue) with the refused action and object in the error
        with pytest.raises(Exception, match="s3:GetObject") as raised:
            deployed.app.invoke("register", _s3_event(key))
    finally:
        del deployed.iam.decisions[mark:]
    cause = raised.value.__cause__ or raised.value
    assert isinstance(cause, AccessDeniedError)
    assert cause.resource == f"arn:aws:s3:::{BUCKET}/{key}"
