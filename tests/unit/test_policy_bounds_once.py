"""A policy's bounds are stated once, on RetentionPolicy's ``Bounds``: ``policy_problems``
refuses past exactly those (a bound changed there changes the refusal), naming the field."""

from __future__ import annotations

import dataclasses

import pytest

from snapledger.models import policy as policy_module
from snapledger.models.policy import POLICY_FIELDS, PolicyField, RetentionPolicy, policy_problems

BOUNDED = [f for f in POLICY_FIELDS if f.kind is not bool]
#: The lowest floors, so no rule across fields (a cap below a floor) speaks.
LOWEST = {"min_count": 1, "min_age_hours": 0.0}


def _past(field: PolicyField, high: bool) -> float:
    b = field.bounds
    step = 0.5 if field.kind is float else 1
    if high:
        assert b.le is not None
        return b.le + (1 if b.le > 2**52 else step)
    assert b.low is not None
    return b.low - step


@pytest.mark.parametrize("field", BOUNDED, ids=lambda f: f.name)
def test_each_declared_bound_is_what_policy_problems_refuses(field: PolicyField) -> None:
    # Given a field's declared bounds, and a policy just within and just past each
    for high, bound in ((False, field.bounds.low), (True, field.bounds.le)):
        if bound is None:
            continue
        within = RetentionPolicy.model_construct(**{**LOWEST, field.name: bound})
        past = RetentionPolicy.model_construct(**{**LOWEST, field.name: _past(field, high)})
        # Then only the one past it is refused, naming the field
        assert policy_problems(within) == []
        assert [p for p in policy_problems(past) if p.startswith(f"{field.name} ")]


def test_changing_a_bound_where_it_is_declared_changes_the_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given min_count declared with a ceiling of 10 instead of its own
    fields = tuple(
        dataclasses.replace(f, bounds=dataclasses.replace(f.bounds, le=10))
        if f.name == "min_count"
        else f
        for f in POLICY_FIELDS
    )
    monkeypatch.setattr(policy_module, "POLICY_FIELDS", fields)
    # When a policy keeps 11
    problems = policy_problems(RetentionPolicy.model_construct(min_count=11, max_count=None))
    # Then it is refused with the declared bound and its reason
    assert problems == [
        "min_count may be at most 10 (got 11): keep more with max_count, a longer "
        "min_age_hours, or holds"
    ]


def test_the_worded_refusals_keep_their_reasons() -> None:
    assert policy_problems(RetentionPolicy.model_construct(min_count=0, max_count=None)) == [
        "min_count must be at least 1 (got 0): the newest snapshot is always kept"
    ]
    assert policy_problems(RetentionPolicy.model_construct(min_generations=17)) == [
        "min_generations may be at most 16 (got 17): the stream's HEAD remembers that many "
        "completed generations"
    ]
    assert policy_problems(RetentionPolicy.model_construct(min_age_hours=-1.0)) == [
        "min_age_hours must be a finite number of hours >= 0 and at most 876000 (got -1)"
    ]
