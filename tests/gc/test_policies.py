"""Retention policies: validation with reasons, and every change an event of the stream's log
(moto and DynamoDB Local)."""

from __future__ import annotations

import pytest

from infra import names
from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.core.stream import decide_stream, evolve_stream_all
from snapledger.errors import (
    InvalidRequestError,
    LostRaceError,
    StaleVersionError,
    TransientStoreError,
)
from snapledger.gc_settings import GcConfig
from snapledger.models.commands import SetPolicy
from snapledger.models.events import PolicyReset, PolicySet
from snapledger.models.policy import RetentionPolicy, StoredPolicy, parse_policy
from snapledger.services.policies import PolicyCache, get_policy, reset_policy, set_policy

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
    # refused with the settings themselves (the cold start), not at each run
    with pytest.raises(ValueError, match="min_count must be at least 1"):
        GcConfig(default_min_count=0)


@pytest.fixture
def policies(ledger):
    return DynamoPolicyStore(ledger.table_name, client=ledger.client)


@pytest.fixture
def streams(ledger):
    return DynamoStreamLog(ledger.table_name, client=ledger.client)


def test_a_stream_without_a_policy_gets_the_default(policies):
    effective = get_policy(policies, "orders", DEFAULT)
    assert (effective.source, effective.policy, effective.version) == ("default", DEFAULT, None)


def test_setting_changes_only_the_given_fields_and_none_clears_a_cap(policies, streams, clock):
    # When a cap is set on a stream with no policy, then min_count changed, then the cap cleared
    first = set_policy(streams, "orders", {"max_count": 10}, default=DEFAULT, clock=clock, by="ann")
    second = set_policy(streams, "orders", {"min_count": 4}, default=DEFAULT, clock=clock)
    third = set_policy(streams, "orders", {"max_count": None}, default=DEFAULT, clock=clock)
    # Then each write built on the last, and the versions count them
    first_policy = first.effective
    assert (first_policy.version, first_policy.policy.max_count, first_policy.updated_by) == (
        1,
        10,
        "ann",
    )
    assert (second.effective.policy.min_count, second.effective.policy.max_count) == (4, 10)
    assert (third.effective.version, third.effective.policy.max_count) == (3, None)
    stored = get_policy(policies, "orders", DEFAULT)
    assert stored.source == "stream" and stored.to_dict()["policy"]["min_count"] == 4
    assert get_policy(policies, "payments", DEFAULT).source == "default"


def test_an_invalid_change_is_refused_and_nothing_is_stored(policies, streams, clock):
    with pytest.raises(InvalidRequestError, match="max_count"):
        set_policy(streams, "orders", {"max_count": 1}, default=DEFAULT, clock=clock)
    with pytest.raises(InvalidRequestError, match="unknown policy fields"):
        set_policy(streams, "orders", {"keep": 1}, default=DEFAULT, clock=clock)
    assert policies.get("orders") is None
    assert stream_items(streams, "orders") == []


def test_a_change_based_on_a_stale_read_is_refused(policies, streams, clock):
    # Given two operators who both read version 1
    set_policy(streams, "orders", {"min_count": 4}, default=DEFAULT, clock=clock)
    set_policy(
        streams, "orders", {"min_count": 5}, default=DEFAULT, clock=clock, expected_version=1
    )
    # When the second writes on the version it read
    with pytest.raises(StaleVersionError, match="version 2, not 1"):
        set_policy(
            streams, "orders", {"min_count": 6}, default=DEFAULT, clock=clock, expected_version=1
        )
    with pytest.raises(StaleVersionError, match="version 2, not 1"):
        reset_policy(streams, "orders", default=DEFAULT, clock=clock, expected_version=1)
    # Then the first one's change stands, and only the two changes are events
    assert policies.get("orders").policy.min_count == 5
    assert [e.seq for e in all_events(streams, "orders")] == [1, 2]


# --- the stream's log on the table ----------------------------------------------------


def stream_items(streams, stream):
    """Every item under STREAM#{stream}, by sort key."""
    response = streams.client.query(
        TableName=streams.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"STREAM#{stream}"}},
        ConsistentRead=True,
    )
    return response["Items"]


def all_events(streams, stream):
    events, cursor = [], None
    while True:
        page = streams.list_events(stream, cursor=cursor, limit=3)
        events += page.items
        cursor = page.cursor
        if cursor is None:
            return events


def test_a_set_writes_the_policy_its_event_and_the_head_together(streams, clock):
    # When a policy is set on a stream that had none
    change = set_policy(
        streams,
        "orders",
        {"min_count": 5, "min_age_hours": 1.5},
        default=DEFAULT,
        clock=clock,
        by="ann",
        request_id="req-1",
    )
    # Then the stream's partition holds its HEAD, event 1 and the POLICY item
    items = {item["sk"]["S"]: item for item in stream_items(streams, "orders")}
    assert sorted(items) == ["EV#000000000001", "HEAD", "POLICY"]
    # the event item is what the Pipe forwards: an EV# key and a type attribute
    event_item = items["EV#000000000001"]
    assert event_item["sk"]["S"].startswith(names.EVENT_ITEM_PREFIX)
    assert event_item[names.EVENT_TYPE_ATTRIBUTE] == {"S": "PolicySet"}
    assert event_item["policy"]["M"]["min_age_hours"] == {"N": "1.5"}
    assert "partition" not in event_item and "kind" not in items["HEAD"]
    # and it reads back as the event the service answered, hours and all
    [event] = all_events(streams, "orders")
    assert event == change.event and change.outcome == "set"
    assert (event.policy.min_age_hours, event.previous_policy, event.by) == (1.5, DEFAULT, "ann")
    assert event.changed == ("min_count", "min_age_hours")
    head = streams.get_head("orders")
    assert (head.version, head.policy_version, head.recent_commands) == (
        1,
        1,
        ("policy-set:req-1",),
    )


def test_a_reset_removes_the_policy_and_gc_follows_the_default_again(policies, streams, clock):
    # Given a stream with its own policy
    set_policy(streams, "orders", {"min_count": 7}, default=DEFAULT, clock=clock)
    assert PolicyCache(policies, DEFAULT)("orders").min_count == 7
    # When it is reset
    change = reset_policy(streams, "orders", default=DEFAULT, clock=clock, by="bob")
    # Then the POLICY item is gone, the event says what was removed, GC reads the default
    assert change.outcome == "reset" and change.effective.source == "default"
    assert policies.get("orders") is None
    assert PolicyCache(policies, DEFAULT)("orders") == DEFAULT
    first, second = all_events(streams, "orders")
    assert isinstance(first, PolicySet) and isinstance(second, PolicyReset)
    assert (second.seq, second.previous_version, second.by) == (2, 1, "bob")
    assert second.previous_policy.min_count == 7 and second.policy == DEFAULT
    # and a reset of a stream on the default changes nothing
    again = reset_policy(streams, "orders", default=DEFAULT, clock=clock)
    assert (again.outcome, again.event) == ("unchanged", None)
    # and the next set continues the versions, never reusing one
    after = set_policy(streams, "orders", {"min_count": 2}, default=DEFAULT, clock=clock)
    assert after.effective.version == 2 and after.event.seq == 3


def test_the_same_request_delivered_twice_appends_one_event(streams, clock):
    for _ in range(2):
        set_policy(
            streams, "orders", {"min_count": 5}, default=DEFAULT, clock=clock, request_id="r1"
        )
    # even after another change, the first request's redelivery is recognised
    set_policy(streams, "orders", {"min_count": 6}, default=DEFAULT, clock=clock, request_id="r2")
    late = set_policy(
        streams,
        "orders",
        {"min_count": 5},
        default=DEFAULT,
        clock=clock,
        request_id="r1",
        expected_version=0,
    )
    assert (late.outcome, late.event, late.effective.policy.min_count) == ("duplicate", None, 6)
    assert [e.command_id for e in all_events(streams, "orders")] == [
        "policy-set:r1",
        "policy-set:r2",
    ]


def test_history_pages_in_order_after_a_sequence_number(streams, clock):
    for n in range(1, 8):
        set_policy(streams, "orders", {"min_count": n}, default=DEFAULT, clock=clock)
    assert [e.seq for e in all_events(streams, "orders")] == list(range(1, 8))
    page = streams.list_events("orders", after_seq=5)
    assert [e.seq for e in page.items] == [6, 7] and page.cursor is None
    assert streams.list_events("payments").items == []


def test_a_commit_on_a_stale_head_or_policy_is_a_lost_race_and_writes_nothing(
    streams, policies, clock
):
    set_policy(streams, "orders", {"min_count": 4}, default=DEFAULT, clock=clock)
    before = streams.load("orders")
    command = SetPolicy(stream="orders", changes={"min_count": 9}, default=DEFAULT, request_id="x")
    events = decide_stream(before, command, clock.now())
    after = evolve_stream_all(before, events)
    # When someone else's change lands between our read and our write
    set_policy(streams, "orders", {"min_count": 5}, default=DEFAULT, clock=clock)
    # Then our transaction is refused as a whole
    with pytest.raises(LostRaceError):
        streams.commit(before, events, after, request_token="t" * 32)
    assert policies.get("orders").policy.min_count == 5
    assert [e.seq for e in all_events(streams, "orders")] == [1, 2]


def test_a_policy_written_before_the_log_existed_is_changed_on_its_version(
    streams, policies, clock
):
    # Given a POLICY item as the earlier version wrote it: version 3, no HEAD, no events
    legacy = StoredPolicy(
        stream="orders",
        policy=DEFAULT.model_copy(update={"min_count": 4}),
        version=3,
        updated_at=clock.now(),
    )
    streams.client.put_item(TableName=streams.table_name, Item=codec.policy_item(legacy))
    assert policies.get("orders") == legacy
    # When a writer of the earlier version changes it between our read and our write
    before = streams.load("orders")
    command = SetPolicy(stream="orders", changes={"min_count": 9}, default=DEFAULT, request_id="x")
    events = decide_stream(before, command, clock.now())
    bumped = legacy.model_copy(update={"version": 4})
    streams.client.put_item(TableName=streams.table_name, Item=codec.policy_item(bumped))
    # Then the POLICY item's own condition refuses ours (HEAD alone could not tell)
    with pytest.raises(LostRaceError):
        streams.commit(before, events, evolve_stream_all(before, events), request_token="u" * 32)
    # and through the service the change builds on version 4: the log starts at 1
    change = set_policy(streams, "orders", {"min_count": 9}, default=DEFAULT, clock=clock)
    assert (change.event.seq, change.event.version, change.event.previous_version) == (1, 5, 4)


class LosesTheFirstAnswer:
    """The stream log, but the first commit's answer is lost after it committed."""

    def __init__(self, log):
        self.log = log
        self.lost = False

    def __getattr__(self, name):
        return getattr(self.log, name)

    def commit(self, before, events, after, *, request_token):
        self.log.commit(before, events, after, request_token=request_token)
        if not self.lost:
            self.lost = True
            raise TransientStoreError("no answer from DynamoDB")


def test_a_write_whose_answer_was_lost_is_not_written_again(streams, clock):
    flaky = LosesTheFirstAnswer(streams)
    change = set_policy(flaky, "orders", {"min_count": 5}, default=DEFAULT, clock=clock)
    assert flaky.lost and change.outcome == "set" and change.event.seq == 1
    assert len(all_events(streams, "orders")) == 1
