"""Arbitrary bytes and JSON through the register *function* (issue 27, invariant 11).

Each example delivers, in one S3 notification, a hostile manifest and a valid one of the
same lineage: the function never raises, answers the hostile one ``rejected`` with a
reason (recorded REJECTED in the ledger), and registers the valid one as if alone.
"""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from snapledger.ids import new_ulid
from snapledger.layout import parse_manifest_key
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.queries import iter_snapshots
from tests.functions.support import s3_put_event
from tests.support import kv_parquet, manifest_document, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
HOSTILE = "__HOSTILE__"
LSNS = itertools.count(1_000, 10)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=300)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner),
    max_leaves=20,
)
#: Raw JSON text a field's value is replaced with: nothing a v1 manifest accepts there.
hostile_values = st.one_of(
    st.integers(min_value=2**63, max_value=10**80).map(str),
    st.integers(min_value=-(10**80), max_value=-1).map(str),
    st.integers(min_value=33, max_value=400_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=4_400, max_value=6_000).map(lambda n: "9" * n),
    st.text(min_size=1, max_size=3_000)
    .filter(lambda t: not t.strip().lstrip("+-").isdigit())
    .map(lambda t: json.dumps(t + "\u202e\U0001f4a5")),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "null", "{}", "[]", "true"]),
)
FIELDS = ["epoch", "lsn", "partition", "snapshot_id", "stream", "files", "producer", "source"]
FIELDS += ["format_version", "row_count", "offsets", "generation", "format"]


#: Values a v1 manifest accepts for these fields (optional, or a list that may be empty).
ACCEPTED = {"generation": {"null"}, "row_count": {"null"}, "offsets": {"null", "{}"}}
ACCEPTED["files"] = {"[]"}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["bytes", "json", "field"]),
    payload=st.binary(max_size=2_000) | json_values,
    field=st.sampled_from(FIELDS),
    value=hostile_values,
)
def test_no_manifest_raises_or_costs_another_its_registration(
    rt, ledger, store, context, register_handler, kind, payload, field, value
):
    lsn = next(LSNS)
    sid = new_ulid()
    data = {"part-00000.parquet": kv_parquet(sid)}
    if kind == "bytes":
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode() + b"\0"
    elif kind == "json":
        text = payload.decode("latin-1") if isinstance(payload, bytes) else payload
        raw = json.dumps(text).encode()
    else:
        assume(value not in ACCEPTED.get(field, ()))
        document = manifest_document("orders", 3, lsn, sid, data)
        document[field] = HOSTILE
        raw = json.dumps(document).replace(f'"{HOSTILE}"', value).encode()
    hostile = write_snapshot(store, "orders", 3, lsn, snapshot_id=sid, files=data, manifest=raw)
    valid = write_snapshot(store, "orders", 3, lsn + 5)

    answer = register_handler(s3_put_event(hostile, valid), context)

    outcomes = {record["key"]: record for record in answer["records"]}
    assert outcomes[hostile]["outcome"] == "rejected", outcomes[hostile]
    assert outcomes[hostile]["reason"]
    assert outcomes[valid]["outcome"] == "became_latest"
    by_id = {r.snapshot_id: r for r in iter_snapshots(ledger, ORDERS_3)}
    assert by_id[sid].status is SnapshotStatus.REJECTED
    assert by_id[sid].rejection_reason == outcomes[hostile]["reason"]
    assert by_id[parse_manifest_key(valid).snapshot_id].status is SnapshotStatus.REGISTERED
