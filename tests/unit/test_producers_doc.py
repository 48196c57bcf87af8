"""docs/producers.md, *Answering a stream snapshot request*: its rule matches the event a
request puts on the bus, and a snapshot written as it says counts for the generation."""

from __future__ import annotations

import json
import re
from pathlib import Path

from snapledger.models.events import StreamSnapshotRequested
from tests.bus_events_support import ENVELOPE, example_event, matches

DOC = Path(__file__).resolve().parents[2] / "docs" / "producers.md"


def _section() -> str:
    text = DOC.read_text()
    return text.split("## Answering a stream snapshot request")[1].split("\n## ")[0]


def test_the_subscription_rule_matches_a_stream_snapshot_request():
    rule = json.loads(
        re.search(r"`(\{\"source\".*?\})`", _section(), re.DOTALL)[1].replace("\n", " ")
    )
    event = example_event(StreamSnapshotRequested).model_dump(mode="json")
    envelope = {**ENVELOPE, "source": "snapledger.ledger", "detail-type": event["type"]}
    assert matches(rule, {**envelope, "detail": event})
    assert not matches(rule, {**envelope, "detail": {**event, "stream": "payments"}})
    assert not matches(rule, {**envelope, "detail-type": "SnapshotRegistered", "detail": event})
