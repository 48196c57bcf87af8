"""Write one release's golden fixtures: one stored ``EV#`` item of every event type.

    .venv/bin/python -m tests.golden.make_fixtures <release-tag>     # e.g. 2026-11-28

Each ``tests/golden/<release-tag>/<type>.json`` holds ``item``, the item exactly as the
ledger's codec writes it into the table (DynamoDB JSON, with its type descriptors and the
TTL of the default window), and ``event``, the event as that release published it on the
bus (its model's JSON). ``test_golden_events.py`` reads every set back through the current
decode path. A set is written once, by the release it is named after, and never replaced:
the script refuses a tag whose folder exists. A later release adds its own set beside.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from snapledger.adapters.dynamodb_codec import (
    DEFAULT_TTL_WINDOW,
    KNOWN_STREAM_EVENT_TYPES,
    event_item,
    stream_event_item,
)
from snapledger.models.bus_events import ledger_event_models
from tests.bus_events_support import example_event

GOLDEN_DIR = Path(__file__).resolve().parent
RELEASE_TAG = re.compile(r"\d{4}-\d{2}-\d{2}(-[a-z0-9]+)*")


def fixture(event: Any) -> dict[str, Any]:
    """One event's fixture: its stored item and its published JSON."""
    stream_log = event.type in KNOWN_STREAM_EVENT_TYPES
    write = stream_event_item if stream_log else event_item
    return {
        "type": event.type,
        "log": "stream" if stream_log else "lineage",
        "item": write(event, DEFAULT_TTL_WINDOW),
        "event": event.model_dump(mode="json"),
    }


def write_set(tag: str, root: Path = GOLDEN_DIR) -> Path:
    """Write the set ``tag`` (a new folder under ``root``) and return its folder."""
    if not RELEASE_TAG.fullmatch(tag):
        raise SystemExit(f"release tag {tag!r}: give the release's date, e.g. 2026-11-28")
    folder = root / tag
    if folder.exists():
        raise SystemExit(
            f"{folder} exists: a release's fixtures are never replaced. Name a new set "
            "after the release that writes it"
        )
    folder.mkdir()
    for seq, model in enumerate(ledger_event_models(), 1):
        document = fixture(example_event(model, seq=seq))
        path = folder / f"{document['type']}.json"
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(f"wrote {write_set(sys.argv[1])}")
