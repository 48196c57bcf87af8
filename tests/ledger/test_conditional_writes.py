"""The one conditional-write helper (adapters/dynamodb_writes.py): preconditions as values,
and one meaning for every DynamoDB failure. The writes run on DynamoDB Local."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from snapledger.adapters import dynamodb_writes as writes
from snapledger.adapters.dynamodb_codec import key
from snapledger.errors import StoreUnavailableError, TransientStoreError
from tests.support import create_ledger, local_client


@pytest.fixture(scope="module")
def table(dynamodb_local):
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    return ledger.client, ledger.table_name


def _item(sk: str, version: int, **extra: str) -> dict:
    return {
        **key("TEST", sk),
        "version": {"N": str(version)},
        **{k: {"S": v} for k, v in extra.items()},
    }


def test_absent_writes_once_and_returns_what_is_there(table):
    client, name = table
    writes.write(client, "put_item", writes.put(name, _item("a", 1), writes.ABSENT), what="a")
    with pytest.raises(writes.PreconditionFailed) as failed:
        request = writes.put(name, _item("a", 9, by="second"), writes.ABSENT, return_old=True)
        writes.write(client, "put_item", request, what="a")
    assert failed.value.existing["version"] == {"N": "1"}
    assert "by" not in failed.value.existing


def test_at_version_replaces_only_the_version_read(table):
    client, name = table
    writes.write(client, "put_item", writes.put(name, _item("b", 1), writes.ABSENT), what="b")
    writes.write(client, "put_item", writes.put(name, _item("b", 2), writes.AtVersion(1)), what="b")
    with pytest.raises(writes.PreconditionFailed):
        writes.write(
            client, "put_item", writes.put(name, _item("b", 3), writes.AtVersion(1)), what="b"
        )
    stored = client.get_item(TableName=name, Key=key("TEST", "b"), ConsistentRead=True)["Item"]
    assert stored["version"] == {"N": "2"}


def test_matches_states_any_other_condition(table):
    client, name = table
    writes.write(
        client, "put_item", writes.put(name, _item("c", 1, state="A"), writes.ABSENT), what="c"
    )
    only_a = writes.Matches("#state = :a", {"#state": "state"}, {":a": {"S": "A"}})
    writes.write(client, "put_item", writes.put(name, _item("c", 2, state="B"), only_a), what="c")
    with pytest.raises(writes.PreconditionFailed):
        writes.write(
            client, "put_item", writes.put(name, _item("c", 3, state="C"), only_a), what="c"
        )


def test_a_transaction_whose_condition_fails_gives_its_reasons_in_order(table):
    client, name = table
    writes.write(client, "put_item", writes.put(name, _item("d", 1), writes.ABSENT), what="d")
    items = [
        {"Put": writes.put(name, _item("e", 1), writes.ABSENT)},
        {"Put": writes.put(name, _item("d", 2), writes.ABSENT, return_old=True)},
    ]
    with pytest.raises(writes.PreconditionFailed) as failed:
        writes.transact(client, items, what="d and e", token="t-1")
    codes = [reason.get("Code") for reason in failed.value.reasons]
    assert codes == ["None", "ConditionalCheckFailed"]
    assert failed.value.reasons[1]["Item"]["version"] == {"N": "1"}
    # and nothing of it was written
    assert "Item" not in client.get_item(TableName=name, Key=key("TEST", "e"))


def test_a_missing_table_names_the_table_and_the_setting(table):
    client, _ = table
    with pytest.raises(
        StoreUnavailableError, match=r"'no-such-table' does not exist.*SNAPLEDGER_TABLE"
    ):
        writes.write(
            client, "put_item", writes.put("no-such-table", _item("f", 1), writes.ABSENT), what="f"
        )


def _client_error(code: str, status: int = 400, reasons: list[str] | None = None) -> ClientError:
    response: dict = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    if reasons is not None:
        response["CancellationReasons"] = [{"Code": r} for r in reasons]
    return ClientError(response, "TransactWriteItems")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_client_error("ThrottlingException"), TransientStoreError),
        (_client_error("ProvisionedThroughputExceededException"), TransientStoreError),
        (_client_error("RequestLimitExceeded"), TransientStoreError),
        (_client_error("TransactionConflictException"), TransientStoreError),
        (_client_error("TransactionInProgressException"), TransientStoreError),
        (_client_error("InternalServerError", 500), TransientStoreError),
        (_client_error("SomethingNew", 503), TransientStoreError),
        (
            _client_error("TransactionCanceledException", reasons=["None", "TransactionConflict"]),
            TransientStoreError,
        ),
        (
            _client_error("TransactionCanceledException", reasons=["ThrottlingError"]),
            TransientStoreError,
        ),
        (
            _client_error("TransactionCanceledException", reasons=["ValidationError"]),
            StoreUnavailableError,
        ),
        (_client_error("ValidationException"), StoreUnavailableError),
        (_client_error("AccessDeniedException"), StoreUnavailableError),
        (ReadTimeoutError(endpoint_url="http://ddb"), TransientStoreError),
    ],
)
def test_every_failure_means_one_thing(error, expected):
    translated = writes.translate(error, what="the lineage orders/3", table="ledger")
    assert type(translated) is expected
    assert "the lineage orders/3" in str(translated)


def test_a_throttled_write_is_transient_not_a_failed_precondition():
    class Throttled:
        def put_item(self, **_):
            raise _client_error("ThrottlingException")

        def transact_write_items(self, **_):
            raise _client_error("TransactionCanceledException", reasons=["TransactionConflict"])

    request = writes.put("ledger", _item("g", 1), writes.ABSENT)
    with pytest.raises(TransientStoreError):
        writes.write(Throttled(), "put_item", request, what="g")
    with pytest.raises(TransientStoreError):
        writes.transact(Throttled(), [{"Put": request}], what="g")
