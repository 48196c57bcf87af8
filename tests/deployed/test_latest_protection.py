"""The latest protected in the bucket, deployed: ``-c protectLatest=true``, under the roles.

The app is synthesized with the setting on and stood up in moto with an Object Lock bucket
and IAM enforced: register holds every file of the snapshots it registers, gc releases the
ones it deletes, and each call is authorized by the synthesized role (a missing grant is an
AccessDenied here, as in AWS). Every grant the setting adds is used by one of these paths.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from infra import names
from snapledger.clock import ManualClock
from snapledger.layout import LATEST_POINTER_NAME, lineage_snapshots_prefix, parse_manifest_key
from snapledger.models.ledger import LineageId
from tests.deployed.deployment import BUCKET, EmulatedDeployment, stand_up
from tests.deployed.iam_emulation import DecisionLog, enforced_iam
from tests.deployed.scenario import _register
from tests.functions.support import sample_event
from tests.infra.conftest import synthesize_app
from tests.support import legal_holds, write_snapshot

STREAM, PARTITION = "orders", 3
PROTECTED = ((names.CTX_PROTECT_LATEST, "true"),)
LEGAL_HOLD_ACTIONS = ("s3:PutObjectLegalHold", "s3:ListBucketVersions")


@dataclass
class Protected:
    app: EmulatedDeployment
    iam: DecisionLog
    manifests: list[str]
    answers: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def protected() -> Iterator[Protected]:
    synth = synthesize_app(PROTECTED)
    with mock_aws(), enforced_iam() as log:
        app = stand_up(synth)
        store = app.store
        manifests = [write_snapshot(store, STREAM, PARTITION, lsn) for lsn in (1_000, 2_000)]
        done = Protected(app=app, iam=log, manifests=manifests)
        done.answers["register"] = _register(app, *manifests)
        done.answers["policy"] = app.invoke(
            "gc", {"action": "policy_set", "stream": STREAM, "min_count": 1, "min_age_hours": 0}
        )
        done.answers["held_before_gc"] = _holds(app, lineage_snapshots_prefix(STREAM, PARTITION))
        later = ManualClock(datetime.now(UTC) + timedelta(days=30))
        done.answers["gc"] = app.invoke(
            "gc", sample_event("eventbridge-scheduled.json"), clock=later
        )
        yield done


def _holds(app: EmulatedDeployment, prefix: str) -> dict[tuple[str, str], str]:
    return legal_holds(app.admin.client("s3"), BUCKET, prefix)


def test_the_bucket_has_object_lock_and_the_functions_the_setting(protected: Protected) -> None:
    app = protected.app
    lock = app.admin.client("s3").get_object_lock_configuration(Bucket=BUCKET)
    assert lock["ObjectLockConfiguration"]["ObjectLockEnabled"] == "Enabled"
    assert "Rule" not in lock["ObjectLockConfiguration"]  # no default retention
    for name in ("register", "gc"):
        assert app.environment(name)["SNAPLEDGER_PROTECT_LATEST"] == "true"


def test_register_holds_every_file_of_what_it_registers_under_its_role(
    protected: Protected,
) -> None:
    assert protected.answers["register"]["ok"], protected.answers["register"]
    held = protected.answers["held_before_gc"]
    snapshot_keys = {key for key, _ in held if not key.endswith(LATEST_POINTER_NAME)}
    # every data file and manifest of both snapshots, and nothing else
    assert {key.rsplit("/", 1)[0] for key in snapshot_keys} == {
        parse_manifest_key(m).prefix.rstrip("/") for m in protected.manifests
    }
    assert all(held[version] == "ON" for version in held if version[0] in snapshot_keys)
    # latest.json is rewritten with If-Match each time the latest moves: never held
    pointers = [version for version in held if version[0].endswith(LATEST_POINTER_NAME)]
    assert pointers and all(held[version] == "none" for version in pointers)


def test_gc_releases_what_it_deletes_and_the_latest_stays_held(protected: Protected) -> None:
    app = protected.app
    assert protected.iam.denied() == []
    run = protected.answers["gc"]
    first, second = (parse_manifest_key(m) for m in protected.manifests)
    lineage = run["report"]["lineages"][0]
    assert [d["snapshot_id"] for d in lineage["deleted"]] == [first.snapshot_id], run
    assert lineage["errors"] == []
    # the deleted snapshot: no current object, and no version still held
    assert list(app.store.list(first.prefix)) == []
    old = _holds(app, first.prefix)
    assert old and set(old.values()) == {"OFF"}
    # the latest: every version still held
    latest = _holds(app, second.prefix)
    assert latest and set(latest.values()) == {"ON"}


def test_a_held_latest_cannot_be_deleted_even_by_an_admin(protected: Protected) -> None:
    app = protected.app
    s3 = app.admin.client("s3")  # Allow * on *
    latest = parse_manifest_key(protected.manifests[1])
    (key, version_id), *_ = _holds(app, latest.prefix)
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version_id)
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    # a delete without a version id only hides it behind a delete marker: the data stays
    s3.delete_object(Bucket=BUCKET, Key=key)
    assert s3.get_object(Bucket=BUCKET, Key=key, VersionId=version_id)["Body"].read()
    s3.delete_object(Bucket=BUCKET, Key=key, VersionId=_marker(s3, key))  # undo the marker


def _marker(s3: Any, key: str) -> str:
    markers = s3.list_object_versions(Bucket=BUCKET, Prefix=key)["DeleteMarkers"]
    return str(next(m["VersionId"] for m in markers if m["IsLatest"]))


def test_every_legal_hold_grant_is_used_by_a_path(protected: Protected) -> None:
    app = protected.app
    unused = []
    for name in ("register", "gc"):
        used = [
            d
            for d in protected.iam.decisions
            if d.allowed and f"/snapledger-{name}/" in d.principal
        ]
        for statement in app.role_statements(name):
            actions = statement["Action"]
            actions = actions if isinstance(actions, list) else [actions]
            resources = statement["Resource"]
            resources = resources if isinstance(resources, list) else [resources]
            for action in set(actions) & set(LEGAL_HOLD_ACTIONS):
                if not any(
                    d.action == action
                    and any(fnmatch.fnmatchcase(d.resource, r) for r in resources)
                    for d in used
                ):
                    unused.append(f"{name}: {action}")
    granted = {
        (name, action)
        for name in ("register", "gc")
        for statement in app.role_statements(name)
        for action in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        if action in LEGAL_HOLD_ACTIONS
    }
    assert granted == {
        ("register", "s3:PutObjectLegalHold"),
        ("gc", "s3:PutObjectLegalHold"),
        ("gc", "s3:ListBucketVersions"),
    }
    assert unused == []


def test_without_the_hold_grant_registration_is_refused_and_nothing_is_recorded(
    protected: Protected,
) -> None:
    app = protected.app
    app.withdraw("register", "s3:PutObjectLegalHold")
    manifest = write_snapshot(app.store, STREAM, PARTITION, 3_000)
    answer = _register(app, manifest)
    # the message goes back to the queue (retried, then the failure queue): no record
    assert len(answer["batchItemFailures"]) == 1, answer
    location = parse_manifest_key(manifest)
    head = app.ledger.get_head(LineageId(stream=STREAM, partition=PARTITION), consistent=True)
    assert head is not None and head.latest_snapshot_id != location.snapshot_id
    denied = protected.iam.denied()
    assert denied and {d.action for d in denied} == {"s3:PutObjectLegalHold"}
