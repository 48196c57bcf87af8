"""The Decider's rule for a changelog file that is not a segment: one event says so.

Whether it was already recorded is the segment store's to say (its marker item, written
after the event); ``decide`` only turns the command into its event.
"""

from __future__ import annotations

from datetime import datetime

from snapledger.core.state import LineageState, Sequencer
from snapledger.models.commands import RejectSegment
from snapledger.models.events import ChangelogSegmentRejected, LedgerEvent


def decide_reject_segment(
    state: LineageState, cmd: RejectSegment, now: datetime
) -> list[LedgerEvent]:
    ev = Sequencer(state, cmd.command_id, now)
    return [
        ChangelogSegmentRejected(
            **ev.next(),
            segment_key=cmd.segment_key,
            size=cmd.size,
            reason=cmd.reason,
        )
    ]
