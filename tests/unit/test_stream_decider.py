"""The stream Decider: policy changes as events, idempotency, versions, a gapless log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core.stream import StreamState, decide_stream, evolve_stream_all
from snapledger.errors import InvalidRequestError, StaleVersionError
from snapledger.models.commands import ResetPolicy, SetPolicy
from snapledger.models.events import PolicyReset, PolicySet, StreamEventBase
from snapledger.models.ledger import RECENT_COMMANDS_KEPT
from snapledger.models.policy import RetentionPolicy, StoredPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT = RetentionPolicy(min_count=3, min_age_hours=24)


def set_(request_id: str, expected: int | None = None, **changes: object) -> SetPolicy:
    return SetPolicy(
        stream="orders",
        changes=changes,
        default=DEFAULT,
        expected_version=expected,
        by="ann",
        request_id=request_id,
    )


def reset(request_id: str, expected: int | None = None) -> ResetPolicy:
    return ResetPolicy(
        stream="orders", default=DEFAULT, expected_version=expected, by="bob", request_id=request_id
    )


def run(state: StreamState, *commands: SetPolicy | ResetPolicy):
    produced = []
    for command in commands:
        events = decide_stream(state, command, T0)
        state = evolve_stream_all(state, events)
        produced.append(events)
    return state, produced


def empty() -> StreamState:
    return StreamState.empty("orders")


def test_a_first_set_records_the_whole_policy_what_changed_and_what_was_before():
    state, [[event]] = run(empty(), set_("r1", min_count=5, max_count=10))
    assert isinstance(event, PolicySet)
    assert (event.seq, event.version, event.previous_version) == (1, 1, None)
    assert event.policy == RetentionPolicy(min_count=5, min_age_hours=24, max_count=10)
    assert event.previous_policy == DEFAULT
    assert event.changed == ("min_count", "max_count")
    assert (event.by, event.command_id, event.stream) == ("ann", "policy-set:r1", "orders")
    # and the state is what GC will read
    assert state.policy is not None and state.policy.policy == event.policy
    assert (state.policy.version, state.head.version, state.head.policy_version) == (1, 1, 1)


def test_setting_the_same_values_again_is_no_event():
    state, _ = run(empty(), set_("r1", min_count=5))
    assert decide_stream(state, set_("r2", min_count=5), T0) == []


def test_setting_the_default_values_on_a_stream_without_a_policy_stores_them():
    # The stream stops following the default, though no value differs today
    state, [[event]] = run(empty(), set_("r1", min_count=3))
    assert isinstance(event, PolicySet) and event.changed == ()
    assert state.policy is not None and state.policy.policy == DEFAULT


def test_a_duplicate_request_is_no_event_even_when_its_version_is_stale():
    state, _ = run(empty(), set_("r1", expected=0, min_count=5), set_("r2", min_count=6))
    assert decide_stream(state, set_("r1", expected=0, min_count=5), T0) == []
    assert decide_stream(state, reset("r1"), T0) != []  # another command kind: its own id


def test_a_stale_expected_version_is_refused_with_what_to_do():
    state, _ = run(empty(), set_("r1", min_count=5))
    with pytest.raises(StaleVersionError, match=r"at version 1, not 0.*read it again"):
        decide_stream(state, set_("r2", expected=0, min_count=6), T0)
    with pytest.raises(StaleVersionError, match="at version 1, not 2"):
        decide_stream(state, reset("r3", expected=2), T0)
    assert decide_stream(state, reset("r4", expected=1), T0) != []


def test_an_invalid_policy_is_refused():
    with pytest.raises(InvalidRequestError, match="max_count \\(2\\) is below min_count"):
        decide_stream(empty(), set_("r1", max_count=2), T0)


def test_a_reset_records_the_policy_removed_and_the_default_that_applies():
    state, [_, [event]] = run(empty(), set_("r1", min_count=5), reset("r2"))
    assert isinstance(event, PolicyReset)
    assert (event.seq, event.previous_version, event.by) == (2, 1, "bob")
    assert event.previous_policy.min_count == 5 and event.policy == DEFAULT
    assert state.policy is None and state.policy_version == 0


def test_a_reset_of_a_stream_on_the_default_is_no_event():
    assert decide_stream(empty(), reset("r1"), T0) == []


def test_versions_are_never_reused_after_a_reset():
    # Given a policy at version 2, reset
    state, _ = run(empty(), set_("r1", min_count=4), set_("r2", min_count=5), reset("r3"))
    # When it is set again
    state, [[event]] = run(state, set_("r4", min_count=6))
    # Then it gets version 3: someone who read version 1 or 2 is refused, never misled
    assert isinstance(event, PolicySet) and (event.version, event.previous_version) == (3, None)
    with pytest.raises(StaleVersionError):
        decide_stream(state, set_("r5", expected=1, min_count=7), T0)


def test_a_policy_stored_before_the_log_existed_keeps_its_version_count():
    legacy = StoredPolicy(
        stream="orders",
        policy=DEFAULT.model_copy(update={"min_count": 4}),
        version=3,
        updated_at=T0,
    )
    state = StreamState(head=empty().head, policy=legacy)
    _, [[event]] = run(state, set_("r1", expected=3, min_count=5))
    assert isinstance(event, PolicySet)
    assert (event.seq, event.version, event.previous_version) == (1, 4, 3)
    assert event.previous_policy.min_count == 4 and event.changed == ("min_count",)


def test_head_remembers_a_bounded_number_of_commands():
    commands = [set_(f"r{n}", min_count=1 + n % 2) for n in range(RECENT_COMMANDS_KEPT + 5)]
    state, _ = run(empty(), *commands)
    assert len(state.head.recent_commands) == RECENT_COMMANDS_KEPT
    assert state.head.recent_commands[-1] == commands[-1].command_id


commands = st.lists(
    st.one_of(
        st.builds(
            lambda rid, n: set_(f"r{rid}", min_count=n),
            st.integers(0, 20),
            st.integers(1, 6),
        ),
        st.builds(lambda rid: reset(f"r{rid}"), st.integers(0, 20)),
    ),
    max_size=RECENT_COMMANDS_KEPT - 1,  # within the window HEAD remembers
)


@settings(max_examples=300, deadline=None)
@given(commands)
def test_any_sequence_of_changes_is_a_gapless_log_that_replays_to_the_state(sequence):
    state, produced = run(empty(), *sequence)
    events = [e for batch in produced for e in batch]
    # Invariant 5: in order, no gaps, HEAD at the last
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert state.head.version == len(events)
    # every change is an event: replaying the log gives the same state
    assert evolve_stream_all(empty(), events) == state
    # one event at most per request id and kind
    assert len({e.command_id for e in events}) == len(events)
    # a policy's versions only grow, and a reset never hands its version out again
    versions = [e.version for e in events if isinstance(e, PolicySet)]
    assert versions == sorted(set(versions))


@pytest.mark.parametrize("model", [PolicySet, PolicyReset])
def test_docs_ledger_lists_every_field_of_the_stream_events(model):
    text = (Path(__file__).resolve().parents[2] / "docs" / "ledger.md").read_text()
    [row] = [line for line in text.splitlines() if line.startswith(f"| `{model.__name__}` |")]
    own = set(model.model_fields) - set(StreamEventBase.model_fields) - {"type"}
    assert {name for name in own if f"`{name}`" not in row} == set()


def test_a_stream_event_no_rule_applies_moves_only_the_version():
    from typing import Literal

    class StreamNoteTaken(StreamEventBase):
        type: Literal["StreamNoteTaken"] = "StreamNoteTaken"
        text: str

    state, _ = run(empty(), set_("a", min_count=5))
    note = StreamNoteTaken(seq=2, at=T0, stream="orders", command_id="note", text="hello")
    after = evolve_stream_all(state, [note])  # type: ignore[list-item]
    assert after.head.version == 2
    assert after.head.recent_commands[-1] == "note"
    assert (after.policy, after.generations) == (state.policy, state.generations)
