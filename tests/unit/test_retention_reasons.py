"""GC's keep reasons and delete causes: each declared once, with its text and its marker
(``models/retention_reasons.py``); the caps are rows of one table (``core/retention.CAPS``)."""

from __future__ import annotations

from enum import StrEnum

import pytest
from pydantic import ValidationError

from snapledger.core.retention import CAPS
from snapledger.models.gc_commands import ExpiryTarget
from snapledger.models.policy import POLICY_FIELDS, RetentionPolicy
from snapledger.models.retention_reasons import DeleteCause, KeepReason

MEMBERS = [*KeepReason, *DeleteCause]


@pytest.mark.parametrize("member", MEMBERS, ids=str)
def test_every_reason_and_cause_has_its_text_and_its_marker(member) -> None:
    # Given a declared reason or cause
    # Then it says what it means and how a plan's picture draws it
    assert member.text.strip()
    assert member.marker.strip()


def test_no_two_reasons_or_causes_share_a_marker() -> None:
    # Given both vocabularies, drawn side by side in a plan's picture
    markers = [member.marker for member in MEMBERS]
    # Then each is told apart by its marker
    assert len(set(markers)) == len(markers)


def test_a_reason_declared_without_its_text_or_marker_is_refused() -> None:
    # Given a vocabulary built as KeepReason is, one member missing its marker
    # When it is declared
    # Then the declaration fails, naming the member and what it lacks
    with pytest.raises(TypeError, match="'gone' is declared without its marker"):

        class Forgetful(StrEnum):
            __new__ = KeepReason._new_member_
            GONE = "gone", "a reason with no marker", ""

    with pytest.raises(TypeError, match="without its text, reason_template"):

        class Terse(StrEnum):
            __new__ = DeleteCause._new_member_
            GONE = "gone", " ", "o", ""


def test_the_event_reason_of_each_cause_is_the_wording_gc_has_always_written() -> None:
    # Given a policy with every cap, and a grace window
    policy = RetentionPolicy(min_count=2, min_age_hours=12, max_count=5, max_age_hours=36.5)
    # Then each cause's SnapshotExpiring reason is worded as before it was declared here
    assert {cause: cause.reason(policy, 24.0) for cause in DeleteCause} == {
        DeleteCause.UNPROTECTED: "not the latest, not among the newest 2, older than 12h, "
        "no pin and no live hold",
        DeleteCause.BEYOND_MAX_COUNT: "unprotected, and max_count 5 newer snapshots are kept",
        DeleteCause.OLDER_THAN_MAX_AGE: "unprotected, and older than max_age 36.5h",
        DeleteCause.REJECTED: "REJECTED and registered more than 24h ago",
        DeleteCause.EXPIRING: "already EXPIRING: an earlier run committed to deleting it",
    }


def test_every_cap_of_the_policy_is_a_rule_with_its_own_cause() -> None:
    # Given the policy's fields declared as caps, and the cap rules
    caps = {f.name for f in POLICY_FIELDS if f.bounds.cap}
    # Then each cap field has exactly one rule, each with a cause no other rule gives
    assert sorted(cap.field for cap in CAPS.values()) == sorted(caps)
    assert all(cause is cap.cause for cause, cap in CAPS.items())
    assert not {DeleteCause.UNPROTECTED, DeleteCause.REJECTED, DeleteCause.EXPIRING} & set(CAPS)
    # And a policy has caps exactly when one of those fields is set
    assert not RetentionPolicy().has_caps
    for name in caps:
        assert RetentionPolicy.model_validate({name: 100}).has_caps, name


def test_a_target_carries_its_cause_as_the_same_word_on_the_wire() -> None:
    # Given a target typed with the declared cause
    target = ExpiryTarget(sort_key="SNAP#1", cause=DeleteCause.BEYOND_MAX_COUNT)
    # Then its JSON is the word it always was, and the word reads back as the member
    assert target.model_dump(mode="json") == {"sort_key": "SNAP#1", "cause": "beyond_max_count"}
    assert ExpiryTarget.model_validate_json(target.model_dump_json()).cause is (
        DeleteCause.BEYOND_MAX_COUNT
    )


def test_a_target_refuses_a_cause_that_chooses_nothing() -> None:
    # Given "expiring" (finishing an earlier run's choice) and a word no cause has
    for cause, said in (("expiring", "chooses nothing"), ("too_old", "Input should be")):
        # When a target is built with it
        # Then it is refused, saying why
        with pytest.raises(ValidationError, match=said):
            ExpiryTarget.model_validate({"sort_key": "SNAP#1", "cause": cause})
