"""A Fluss table's KV folder deployed (``-c layouts`` with a ``fluss-kv`` entry, ``-c
fluss``), under the roles: the app synthesized as tests/infra/test_fluss_reach.py builds it
and stood up in moto with IAM enforced (iam_emulation.py). Fluss's snapshots arrive as S3
events and are registered (intake, then the FIFO queue's consumer, both as register); gc, as
gc, checks the latest (heal), expires the older ones, drops their ZooKeeper nodes (in
memory here: tests/fluss runs the real ZooKeeper) before deleting their files, keeps the
shared SSTs the latest uses and sweeps an orphan SST. Then the forbidden calls are refused:
register writing or deleting under the prefix, gc writing there or touching a prefix no
table was given."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from snapledger.adapters import zookeeper_fluss
from snapledger.clock import ManualClock
from snapledger.settings import ENV_FLUSS_ZOOKEEPER
from tests.deployed.deployment import BUCKET, EmulatedDeployment, stand_up
from tests.deployed.iam_emulation import DecisionLog, enforced_iam
from tests.deployed.scenario import _register
from tests.fluss.fluss_tree import FlussBucket, MemoryNodes
from tests.functions.support import sample_event
from tests.infra.conftest import synthesize_app
from tests.infra.test_fluss_reach import FLUSS_CONTEXT, KV_PREFIX, NETWORK

pytestmark = pytest.mark.slow

STREAM, TABLE_ID = "orders-kv", 7
UNCONFIGURED = "fluss/kv/shop/returns-9"
#: What each role did under the table's prefix, as the paths must show.
FLUSS_PATHS = {
    "register": {"s3:GetObject", "s3:ListBucket"},
    "gc": {"s3:GetObject", "s3:ListBucket", "s3:DeleteObject"},
}


@dataclass
class FlussDeployed:
    app: EmulatedDeployment
    iam: DecisionLog
    nodes: MemoryNodes
    bucket: FlussBucket
    keys: list[str]
    ssts: list[str]
    orphan: str
    answers: dict[str, Any] = field(default_factory=dict)
    addresses: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def deployed() -> Iterator[FlussDeployed]:
    synth = synthesize_app(FLUSS_CONTEXT)
    nodes = MemoryNodes()
    with mock_aws(), enforced_iam() as log, pytest.MonkeyPatch.context() as patch:
        done = None

        def connect(address: str) -> MemoryNodes:
            assert done is not None
            done.addresses.append(address)
            return nodes

        patch.setattr(zookeeper_fluss, "ZooKeeperFlussNodes", connect)
        app = stand_up(synth)
        # Fluss writes absolute paths under its remote.data.dir, s3://{bucket}
        store = types.SimpleNamespace(root=f"s3://{BUCKET}", put=app.store.put)
        bucket = FlussBucket(store, prefix=KV_PREFIX, table_id=TABLE_ID)
        ssts = [bucket.new_sst(f"sst {i}".encode() * 20) for i in range(4)]
        keys = []
        for n in range(3):  # snap-n uses SSTs n and n+1: each shares one with the one before
            keys.append(bucket.snapshot(n, ssts[n : n + 2], log_offset=100 * (n + 1)))
            nodes.add(TABLE_ID, 0, n)
        orphan = f"{bucket.root}shared/never-completed.sst"
        app.store.put(orphan, b"o" * 100)
        done = FlussDeployed(app, log, nodes, bucket, keys, ssts, orphan)
        done.answers["register"] = _register(app, *keys)
        done.answers["policy"] = app.invoke(
            "gc", {"action": "policy_set", "stream": STREAM, "min_count": 1, "min_age_hours": 0}
        )
        later = ManualClock(datetime.now(UTC) + timedelta(days=30))
        done.answers["gc"] = app.invoke(
            "gc", sample_event("eventbridge-scheduled.json"), clock=later
        )
        yield done


def _refused(call: Any, **kwargs: Any) -> None:
    with pytest.raises(ClientError) as refused:
        call(**kwargs)
    assert refused.value.response["Error"]["Code"] == "AccessDenied", refused.value.response


@pytest.fixture
def probe(deployed: FlussDeployed) -> Iterator[FlussDeployed]:
    """Calls made here are probes, not paths of a function: kept out of the path log."""
    mark = len(deployed.iam.decisions)
    yield deployed
    del deployed.iam.decisions[mark:]


def _keys(app: EmulatedDeployment, prefix: str) -> set[str]:
    return {info.key for info in app.store.list(prefix)}


def test_gc_alone_is_told_fluss_s_zookeeper(deployed: FlussDeployed) -> None:
    assert deployed.app.environment("gc")[ENV_FLUSS_ZOOKEEPER] == NETWORK["zookeeper"]
    for name in ("register", "query", "track_changelog", "launch", "job_state"):
        assert ENV_FLUSS_ZOOKEEPER not in deployed.app.environment(name)
    assert set(deployed.addresses) == {NETWORK["zookeeper"]}  # gc connected there


def test_register_registers_fluss_snapshots_under_its_role(deployed: FlussDeployed) -> None:
    answer = deployed.answers["register"]
    assert answer["ok"], answer
    assert answer["batchItemFailures"] == []
    assert [(r["outcome"], r["key"]) for r in answer["records"]] == [
        ("became_latest", key) for key in deployed.keys
    ]


def test_gc_drops_the_expired_nodes_and_deletes_their_files_under_its_role(
    deployed: FlussDeployed,
) -> None:
    app, bucket = deployed.app, deployed.bucket
    gc = deployed.answers["gc"]
    assert deployed.answers["policy"]["ok"], deployed.answers["policy"]
    assert gc["ok"], gc
    assert deployed.nodes.listed(TABLE_ID, 0) == {2}
    drops = [c for c in deployed.nodes.calls if c[0] == "drop"]
    assert drops == [("drop", 0, 0), ("drop", 0, 1)]
    left = _keys(app, bucket.root)
    for gone in (0, 1):
        assert not any(k.startswith(f"{bucket.root}snap-{gone}/") for k in left)
    assert deployed.keys[2] in left
    shared = {k.rpartition("/")[2] for k in left if "/shared/" in k}
    assert shared == set(deployed.ssts[2:4])  # the latest's two; 0 and 1 gone, the orphan too
    assert deployed.orphan not in left


def test_no_call_was_refused_and_every_fluss_grant_was_used(deployed: FlussDeployed) -> None:
    mine = [d for d in deployed.iam.decisions if "assumed-role/snapledger-" in d.principal]
    assert [f"{d.principal}: {d.action} {d.resource}" for d in mine if not d.allowed] == []
    for name, actions in FLUSS_PATHS.items():
        used = set()
        for d in mine:
            if f"assumed-role/snapledger-{name}/" not in d.principal:
                continue
            under = d.resource.endswith(BUCKET) and str(d.context.get("s3:prefix", "")).startswith(
                KV_PREFIX + "/"
            )
            if under or d.resource.startswith(f"arn:aws:s3:::{BUCKET}/{KV_PREFIX}/"):
                used.add(d.action)
        assert used == actions, name


def test_register_reads_a_fluss_snapshot_but_writes_nothing_under_the_prefix(
    probe: FlussDeployed,
) -> None:
    app, bucket = probe.app, probe.bucket
    s3 = app.client_as("register", "s3")
    s3.get_object(Bucket=BUCKET, Key=probe.keys[2])
    s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{bucket.root}shared/")
    sst = f"{bucket.root}shared/{probe.ssts[3]}"
    for key in (sst, probe.keys[2], f"{bucket.root}snap-9/_METADATA"):
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x")
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
    _refused(s3.delete_object, Bucket=BUCKET, Key=sst)
    _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=UNCONFIGURED + "/")


def test_gc_deletes_under_the_table_but_writes_nothing_and_nowhere_else(
    probe: FlussDeployed,
) -> None:
    app, bucket = probe.app, probe.bucket
    s3 = app.client_as("gc", "s3")
    doomed = f"{bucket.root}snap-9/0000.sst"
    app.store.put(doomed, b"x")
    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": doomed}]})
    assert doomed not in _keys(app, bucket.root)
    _refused(s3.put_object, Bucket=BUCKET, Key=probe.keys[2], Body=b"{}")
    _refused(s3.put_object, Bucket=BUCKET, Key=f"{bucket.root}snap-9/_METADATA", Body=b"{}")
    stranger = f"{UNCONFIGURED}/0/shared/x.sst"
    app.store.put(stranger, b"x")
    _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=UNCONFIGURED + "/")
    _refused(s3.get_object, Bucket=BUCKET, Key=stranger)
    _refused(s3.delete_object, Bucket=BUCKET, Key=stranger)
    # a file directly in the table's folder is no bucket's: not deleted
    stray = f"{KV_PREFIX}/stray.txt"
    app.store.put(stray, b"left alone")
    _refused(s3.delete_object, Bucket=BUCKET, Key=stray)
    assert json.loads(app.store.get(probe.keys[2]))["snapshot_id"] == 2
