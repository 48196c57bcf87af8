"""Restate prefixes deployed (issue 28, "Deploy"): ``-c restatePrefixes``, under the roles.

The app is synthesized with two Restate clusters' prefixes and stood up in moto with IAM
enforced (iam_emulation.py: the synthesized statements, their conditions evaluated). The
real service code runs under the synthesized roles: a Restate snapshot's metadata.json
arrives as an S3 event and is registered (intake, then the FIFO queue's consumer, both as
register); gc, as gc, expires the older snapshots, deletes their folders, sweeps a failed
upload and drops what it deleted from latest.json by compare-and-swap. Then the forbidden
calls are refused: register writing under the prefix, gc deleting latest.json or writing
it without If-Match or touching a prefix no cluster was given; and the managed policy the
stack outputs for a cluster's nodes writes under its own prefix only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from infra import names
from snapledger.clock import ManualClock
from snapledger.layouts import restate
from tests.deployed.deployment import BUCKET, EmulatedDeployment, stand_up
from tests.deployed.iam_emulation import DecisionLog, enforced_iam
from tests.deployed.scenario import _register
from tests.functions.support import sample_event
from tests.infra.conftest import synthesize_app
from tests.restate.fixtures import PREFIX, STREAM, write_latest, write_restate_snapshot

pytestmark = pytest.mark.slow

OTHER_PREFIX, OTHER_STREAM = "restate/prod-2", "ledger"
UNCONFIGURED = "restate/staging"
RESTATE = (
    (
        names.CTX_LAYOUTS,
        json.dumps(
            {
                PREFIX: {"layout": "restate", "stream": STREAM},
                OTHER_PREFIX: {"layout": "restate", "stream": OTHER_STREAM},
            }
        ),
    ),
)
LATEST = restate.latest_pointer_key(PREFIX, 0)
# What each role did under the Restate prefixes, as (action, where) the paths must show.
RESTATE_PATHS = {
    "register": {"s3:GetObject", "s3:ListBucket"},
    "gc": {"s3:GetObject", "s3:ListBucket", "s3:DeleteObject", "s3:PutObject"},
}


@dataclass
class RestateDeployed:
    app: EmulatedDeployment
    iam: DecisionLog
    written: list[Any]
    failed_upload: Any
    #: A failed upload in a partition with no registered snapshot (so no HEAD): the
    #: unledgered sweep lists the Restate prefix for it.
    unledgered_upload: Any = None
    answers: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def deployed() -> Iterator[RestateDeployed]:
    synth = synthesize_app(RESTATE)
    with mock_aws(), enforced_iam() as log:
        app = stand_up(synth)
        store = app.store
        written = [write_restate_snapshot(store, lsn) for lsn in (1_000, 2_000, 3_000)]
        write_latest(store, written[-1], list(reversed(written)))
        failed = write_restate_snapshot(store, 2_500, metadata=False)  # no metadata.json
        unledgered = write_restate_snapshot(store, 700, partition=3, metadata=False)
        done = RestateDeployed(
            app=app, iam=log, written=written, failed_upload=failed, unledgered_upload=unledgered
        )
        done.answers["register"] = _register(app, *(w.location.metadata_key for w in written))
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
def probe(deployed: RestateDeployed) -> Iterator[RestateDeployed]:
    """Calls made here are probes, not paths of a function: kept out of the path log."""
    mark = len(deployed.iam.decisions)
    yield deployed
    del deployed.iam.decisions[mark:]


def _keys(app: EmulatedDeployment, prefix: str) -> set[str]:
    return {info.key for info in app.store.list(prefix)}


def _etag(app: EmulatedDeployment, key: str) -> str:
    return str(app.admin.client("s3").head_object(Bucket=BUCKET, Key=key)["ETag"])


# --- the service paths, under the synthesized roles ----------------------------------------


def test_the_functions_are_given_the_prefixes(deployed: RestateDeployed) -> None:
    expected = {
        PREFIX: {"layout": "restate", "stream": STREAM},
        OTHER_PREFIX: {"layout": "restate", "stream": OTHER_STREAM},
    }
    for name in ("register", "gc", "query"):
        variable = deployed.app.environment(name)["SNAPLEDGER_LAYOUTS"]
        assert json.loads(variable) == expected
    for name in ("track_changelog", "launch", "job_state"):
        assert "SNAPLEDGER_LAYOUTS" not in deployed.app.environment(name)


def test_register_registers_restate_snapshots_under_its_role(deployed: RestateDeployed) -> None:
    answer = deployed.answers["register"]
    assert answer["ok"], answer
    assert answer["intake"]["counts"] == {"queued": 3}
    assert answer["batchItemFailures"] == []
    assert [(r["outcome"], r["key"], r["lsn"]) for r in answer["records"]] == [
        ("became_latest", w.location.metadata_key, w.location.lsn) for w in deployed.written
    ]


def test_gc_deletes_expired_restate_snapshots_and_prunes_latest_json_under_its_role(
    deployed: RestateDeployed,
) -> None:
    app, written = deployed.app, deployed.written
    assert deployed.answers["policy"]["ok"], deployed.answers["policy"]
    gc = deployed.answers["gc"]
    assert gc["ok"], gc
    left = _keys(app, PREFIX + "/")
    for gone in written[:2]:
        assert not any(k.startswith(gone.location.folder) for k in left)
    assert {written[2].location.metadata_key, *written[2].sst_keys} <= left
    # the failed upload (no metadata.json), 30 days old to gc's clock: swept
    assert not any(k.startswith(deployed.failed_upload.location.folder) for k in left)
    # and the one in partition 3, which has no registered snapshot (no HEAD): swept too
    assert not any(k.startswith(deployed.unledgered_upload.location.folder) for k in left)
    orphans = {(o["prefix"], o["action"]) for o in gc["report"]["orphans"]}
    assert (deployed.unledgered_upload.location.folder, "deleted") in orphans
    assert LATEST in left
    retained = json.loads(app.store.get(LATEST))["retained_snapshots"]
    assert [e["snapshot_id"] for e in retained] == [written[2].location.snapshot_id]


def test_no_call_was_refused_and_every_restate_grant_was_used(deployed: RestateDeployed) -> None:
    mine = [d for d in deployed.iam.decisions if "assumed-role/snapledger-" in d.principal]
    assert [f"{d.principal}: {d.action} {d.resource}" for d in mine if not d.allowed] == []
    for name, actions in RESTATE_PATHS.items():
        used = set()
        for d in mine:
            if f"assumed-role/snapledger-{name}/" not in d.principal:
                continue
            under = d.resource.endswith(BUCKET) and str(d.context.get("s3:prefix", "")).startswith(
                PREFIX + "/"
            )
            if under or d.resource.startswith(f"arn:aws:s3:::{BUCKET}/{PREFIX}/"):
                used.add(d.action)
        assert used == actions, name
    # every latest.json write gc made carried If-Match
    writes = [d for d in mine if d.action == "s3:PutObject" and d.resource.endswith(LATEST)]
    assert writes and all("s3:if-match" in d.context for d in writes)


# --- what the roles may not do -------------------------------------------------------------


def test_register_reads_a_restate_snapshot_but_writes_nothing_under_the_prefix(
    probe: RestateDeployed,
) -> None:
    app = probe.app
    kept = probe.written[2]
    s3 = app.client_as("register", "s3")
    s3.get_object(Bucket=BUCKET, Key=kept.location.metadata_key)
    s3.get_object(Bucket=BUCKET, Key=kept.sst_keys[0], Range="bytes=-64")
    s3.list_objects_v2(Bucket=BUCKET, Prefix=kept.location.folder)
    etag = _etag(app, LATEST)
    for key in (kept.sst_keys[0], kept.location.folder + "000099.sst", LATEST):
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x")
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
    _refused(s3.put_object, Bucket=BUCKET, Key=LATEST, Body=b"{}", IfMatch=etag)
    _refused(s3.delete_object, Bucket=BUCKET, Key=kept.sst_keys[0])
    _refused(s3.delete_object, Bucket=BUCKET, Key=LATEST)
    # and nothing under a prefix no cluster was given
    _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=UNCONFIGURED + "/")


def test_gc_deletes_a_folders_objects_and_rewrites_latest_json_only_by_if_match(
    probe: RestateDeployed,
) -> None:
    app = probe.app
    s3 = app.client_as("gc", "s3")
    doomed = write_restate_snapshot(app.store, 9_000, partition=1)
    s3.delete_objects(
        Bucket=BUCKET,
        Delete={"Objects": [{"Key": k} for k in (*doomed.sst_keys, doomed.location.metadata_key)]},
    )
    assert not _keys(app, doomed.location.folder)
    # latest.json: a compare-and-swap goes through ...
    body = app.store.get(LATEST)
    s3.put_object(Bucket=BUCKET, Key=LATEST, Body=body, IfMatch=_etag(app, LATEST))
    # ... a plain write or a create-if-absent does not, nor a delete
    _refused(s3.put_object, Bucket=BUCKET, Key=LATEST, Body=b"{}")
    _refused(
        s3.put_object,
        Bucket=BUCKET,
        Key=restate.latest_pointer_key(PREFIX, 7),
        Body=b"{}",
        IfNoneMatch="*",
    )
    _refused(s3.delete_object, Bucket=BUCKET, Key=LATEST)
    assert app.store.get(LATEST) == body
    # a latest.json inside a snapshot folder is no pointer: not written, even with If-Match
    inside = probe.written[2].location.folder + "latest.json"
    app.store.put(inside, b"{}")
    _refused(s3.put_object, Bucket=BUCKET, Key=inside, Body=b"{}", IfMatch=_etag(app, inside))
    # a partition folder's other objects are not snapshot folders: kept
    stray = f"{PREFIX}/0/stray.txt"
    app.store.put(stray, b"left alone")
    _refused(s3.delete_object, Bucket=BUCKET, Key=stray)


def test_gc_touches_no_prefix_no_cluster_was_given(probe: RestateDeployed) -> None:
    app = probe.app
    s3 = app.client_as("gc", "s3")
    stranger = write_restate_snapshot(app.store, 1_000, prefix=UNCONFIGURED)
    write_latest(app.store, stranger, [stranger], prefix=UNCONFIGURED)
    pointer = restate.latest_pointer_key(UNCONFIGURED, 0)
    _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=UNCONFIGURED + "/")
    _refused(s3.get_object, Bucket=BUCKET, Key=stranger.location.metadata_key)
    _refused(s3.delete_object, Bucket=BUCKET, Key=stranger.sst_keys[0])
    _refused(s3.put_object, Bucket=BUCKET, Key=pointer, Body=b"{}", IfMatch=_etag(app, pointer))


# --- the managed policy for a cluster's nodes ----------------------------------------------


def _node_client(app: EmulatedDeployment, stream: str) -> Any:
    """An S3 client of a role holding only the managed policy the stack outputs for the
    Restate nodes of ``stream``'s prefix."""
    template = app.synth.template_json
    logical_id = template["Outputs"][names.restate_output_key(stream)]["Value"]["Ref"]
    document = app.resolve(template["Resources"][logical_id]["Properties"]["PolicyDocument"])
    return app.role_client(f"restate-nodes-{stream}", document["Statement"], "s3")


def test_a_restate_node_writes_under_its_prefix_only(probe: RestateDeployed) -> None:
    app = probe.app
    node = _node_client(app, OTHER_STREAM)
    folder = restate.snapshot_prefix(OTHER_PREFIX, 0, 5_000, "snap_0005Node")
    latest = restate.latest_pointer_key(OTHER_PREFIX, 0)
    # Restate's own calls: upload a snapshot (SSTs, metadata.json; a multipart upload too),
    # create then repoint latest.json by compare-and-swap, list and read, evict
    node.put_object(Bucket=BUCKET, Key=folder + "000024.sst", Body=b"sst")
    upload = node.create_multipart_upload(Bucket=BUCKET, Key=folder + "000025.sst")
    node.abort_multipart_upload(
        Bucket=BUCKET, Key=folder + "000025.sst", UploadId=upload["UploadId"]
    )
    node.put_object(Bucket=BUCKET, Key=folder + "metadata.json", Body=b"{}")
    node.put_object(Bucket=BUCKET, Key=latest, Body=b"{}", IfNoneMatch="*")
    etag = node.head_object(Bucket=BUCKET, Key=latest)["ETag"]
    node.put_object(Bucket=BUCKET, Key=latest, Body=b"{ }", IfMatch=etag)
    listed = node.list_objects_v2(Bucket=BUCKET, Prefix=f"{OTHER_PREFIX}/0/")
    assert {o["Key"] for o in listed["Contents"]} >= {folder + "000024.sst", latest}
    assert node.get_object(Bucket=BUCKET, Key=folder + "000024.sst")["Body"].read() == b"sst"
    node.delete_object(Bucket=BUCKET, Key=folder + "000024.sst")
    # latest.json: never a plain write, never deleted
    _refused(node.put_object, Bucket=BUCKET, Key=latest, Body=b"{}")
    _refused(node.delete_object, Bucket=BUCKET, Key=latest)
    # nothing under snapledger's own prefixes, nor another cluster's, nor the bucket's root
    for key in (
        "snapshots/orders/3/latest.json",
        "snapshots/orders/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/part-0.parquet",
        "changelog/orders/3/x.parquet",
        f"{PREFIX}/0/lsn_00000000000000005000-snap_0005Node/000024.sst",
        restate.latest_pointer_key(PREFIX, 0),
        "x.sst",
    ):
        _refused(node.put_object, Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
        _refused(node.get_object, Bucket=BUCKET, Key=key)
        _refused(node.delete_object, Bucket=BUCKET, Key=key)
    _refused(node.put_object, Bucket=BUCKET, Key=LATEST, Body=b"{}", IfMatch=_etag(app, LATEST))
    for prefix in ("snapshots/", f"{PREFIX}/", "restate/", ""):
        _refused(node.list_objects_v2, Bucket=BUCKET, Prefix=prefix)
