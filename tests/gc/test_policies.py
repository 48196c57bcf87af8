"""Retention policies: validation with reasons, storage per stream, conditional updates."""

from __future__ import annotations

import pytest

from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.errors import ConcurrencyError, InvalidRequestError
from snapledger.gc_settings import GcConfig
from snapledger.models.policy import RetentionPolicy, StoredPolicy, parse_policy
from snapledger.services.policies import get_policy, set_policy

DEFAULT = GcConfig().default_policy()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"min_count": 0}, "min_count must be at least 1"),
        ({"min_count": 51}, "min_count may be at most 50"),
        ({"min_count": True}, "min_count: Input should be a valid integer"),
        ({"min_age_hours": -1}, "min_age_hours must be a finite number of hours >= 0"),
        ({"min_age_hours": float("inf")}, "min_age_hours must be a finite number"),
        ({"min_count": 5, "max_count": 4}, r"max_count \(4\) is below min_count \(5\)"),
        (
            {"min_age_hours": 48, "max_age_hours": 24},
            r"max_age_hours \(24\) is below min_age_hours",
        ),
        ({"min_age": 3}, "min_age: Extra inputs are not permitted"),
    ],
)
def test_invalid_policies_are_refused_with_what_to_do(values, message):
    with pytest.raises(InvalidRequestError, match=message):
        parse_policy(values)


def test_the_defaults_come_from_configuration():
    assert RetentionPolicy(min_count=3, min_age_hours=24) == DEFAULT
    configured = GcConfig(default_min_count=5, default_max_age_hours=720).default_policy()
    assert (configured.min_count, configured.max_age_hours) == (5, 720)
    with pytest.raises(InvalidRequestError, match="min_count must be at least 1"):
        GcConfig(default_min_count=0).default_policy()


@pytest.fixture
def policies(ledger):
    return DynamoPolicyStore(ledger.table_name, client=ledger.client)


def test_a_stream_without_a_policy_gets_the_default(policies):
    effective = get_policy(policies, "orders", DEFAULT)
    assert (effective.source, effective.policy, effective.version) == ("default", DEFAULT, None)


def test_setting_changes_only_the_given_fields_and_none_clears_a_cap(policies, clock):
    # When a cap is set on a stream with no policy, then min_count changed, then the cap cleared
    first = set_policy(
        policies, "orders", {"max_count": 10}, default=DEFAULT, clock=clock, by="ann"
    )
    second = set_policy(policies, "orders", {"min_count": 4}, default=DEFAULT, clock=clock)
    third = set_policy(policies, "orders", {"max_count": None}, default=DEFAULT, clock=clock)
    # Then each write built on the last, and the versions count them
    assert (first.version, first.policy.max_count, first.updated_by) == (1, 10, "ann")
    assert (second.policy.min_count, second.policy.max_count) == (4, 10)
    assert (third.version, third.policy.min_count, third.policy.max_count) == (3, 4, None)
    stored = get_policy(policies, "orders", DEFAULT)
    assert stored.source == "stream" and stored.to_dict()["policy"]["min_count"] == 4
    assert get_policy(policies, "payments", DEFAULT).source == "default"


def test_an_invalid_change_is_refused_and_nothing_is_stored(policies, clock):
    with pytest.raises(InvalidRequestError, match="max_count"):
        set_policy(policies, "orders", {"max_count": 1}, default=DEFAULT, clock=clock)
    with pytest.raises(InvalidRequestError, match="unknown policy fields"):
        set_policy(policies, "orders", {"keep": 1}, default=DEFAULT, clock=clock)
    assert policies.get("orders") is None


def test_a_change_based_on_a_stale_read_is_refused(policies, clock):
    # Given two operators who both read version 1
    set_policy(policies, "orders", {"min_count": 4}, default=DEFAULT, clock=clock)
    set_policy(
        policies, "orders", {"min_count": 5}, default=DEFAULT, clock=clock, expected_version=1
    )
    # When the second writes on the version it read
    with pytest.raises(ConcurrencyError, match="version 2, not 1"):
        set_policy(
            policies, "orders", {"min_count": 6}, default=DEFAULT, clock=clock, expected_version=1
        )
    # Then the first one's change stands
    assert policies.get("orders").policy.min_count == 5


def test_the_store_refuses_a_write_on_a_version_it_does_not_hold(policies, clock):
    first = StoredPolicy(stream="orders", policy=DEFAULT, version=1, updated_at=clock.now())
    assert policies.put(first)
    assert not policies.put(first)  # version 1 again: someone created it already
    assert not policies.put(first.model_copy(update={"version": 3}))  # skipped version 2
    assert policies.put(first.model_copy(update={"version": 2}))
