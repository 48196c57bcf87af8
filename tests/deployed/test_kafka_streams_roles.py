"""The Kafka Streams steps' managed policies (issue 38, "Set-up on AWS"), proven by execution.

The app is synthesized with ``-c kafkaStreamsStreams`` and stood up in moto with IAM enforced
(iam_emulation.py). The real code the CLI runs, ``StoreSnapshotter.snapshot`` and
``StoreSeeder.seed``, runs in a process environment holding only the credentials of a role
with the policy the stack outputs (``KafkaStreamsSnapshotPolicy``, ``KafkaStreamsSeedPolicy``):
the client finds the query function through the stack's outputs, invokes it (the function
then runs under its own role), lists and reads the snapshot folders and, for the snapshotter,
writes them. The Kafka side (the changelog's offsets, the seeder jar's catch-up) is not AWS:
it is replaced by what the broker would answer, so no JVM starts. Each snapshot written is
registered the AWS way (the S3 event to register, under its role, the kafka-streams layout
configured). Then the calls the policies do not grant are refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from infra import names
from snapledger.client.control import Snapledger
from snapledger.client.transport import AwsTransport
from snapledger.errors import SnapledgerError
from snapledger.kafka_streams import seed as seed_module
from snapledger.kafka_streams import snapshotter as snapshotter_module
from snapledger.kafka_streams.catch_up import CatchUpResult
from snapledger.kafka_streams.changelog import Changelog, ChangelogPartition
from snapledger.kafka_streams.seed import StoreSeeder
from snapledger.kafka_streams.seed_format import TaskId
from snapledger.kafka_streams.snapshotter import StoreSnapshotter
from snapledger.layouts.restate_keys import SST_MAGIC_BYTES
from tests.deployed.deployment import BUCKET, EmulatedDeployment, stand_up
from tests.deployed.iam_emulation import Decision, DecisionLog, enforced_iam
from tests.deployed.outside_roles import acting_as, function_arn, output_policy, published
from tests.deployed.scenario import _register
from tests.infra.conftest import synthesize_app

pytestmark = pytest.mark.slow

APP, STORE = "totals-app", "totals"
TOPIC = f"{APP}-{STORE}-changelog"
OTHER = "other-app-sums-changelog"
PARTITIONS = (0, 1)
KAFKA = ((names.CTX_LAYOUTS, json.dumps({TOPIC: "kafka-streams", OTHER: "kafka-streams"})),)
ROOT = f"s3://{BUCKET}"
DAY_MS = 86_400_000
SEED_ROLE, SNAPSHOT_ROLE = "ks-seed", "ks-snapshot"
# What each step's real path did (action), all under the topic's lineages or on the stack.
SEED_CALLS = {"cloudformation:DescribeStacks", "lambda:InvokeFunction", "s3:ListBucket"}
SEED_CALLS |= {"s3:GetObject"}
SNAPSHOT_CALLS = SEED_CALLS | {"s3:PutObject"}


class FakeBroker:
    """What the broker answers the snapshotter and the seed (offsets, delete.retention.ms),
    and what the seeder jar's catch-up does to a store folder: one more SST per run."""

    def __init__(self) -> None:
        self.end = dict.fromkeys(PARTITIONS, 100)

    def describe(self, _servers: str, topic: str, *, timeout_s: float) -> Changelog:
        parts = {p: ChangelogPartition(p, 0, end) for p, end in self.end.items()}
        return Changelog(topic, parts, DAY_MS)

    def catch_up(
        self, scratch: Path, app: str, tasks: Sequence[TaskId], store: str, _servers: str
    ) -> dict[TaskId, CatchUpResult]:
        results = {}
        for task in tasks:
            folder = scratch / app / str(task) / "rocksdb" / store
            folder.mkdir(parents=True, exist_ok=True)
            previous = sorted(folder.glob("*.sst"))
            (folder / f"{len(previous) + 12:06d}.sst").write_bytes(b"rows" + SST_MAGIC_BYTES)
            (folder / "CURRENT").write_text(f"MANIFEST-{len(previous) + 5}\n")
            end = self.end[task.partition]
            results[task] = CatchUpResult(
                previous_offset=None,
                offset=end - 1,
                applied=10,
                tombstones=0,
                end_offset=end,
                log_start_offset=0,
                end_read_at=datetime.now(UTC),
            )
        return results


@dataclass
class KafkaDeployed:
    app: EmulatedDeployment
    iam: DecisionLog
    seed_credentials: dict[str, str]
    snapshot_credentials: dict[str, str]
    runs: list[Any] = field(default_factory=list)
    registered: list[dict[str, Any]] = field(default_factory=list)
    seeded: list[Any] = field(default_factory=list)
    state_dir: Path | None = None


def _snapshotter() -> StoreSnapshotter:
    registry = Snapledger(AwsTransport(region="us-east-1"))
    return StoreSnapshotter(registry, ROOT, "broker:9092", APP, STORE)


def _seeder() -> StoreSeeder:
    registry = Snapledger(AwsTransport(region="us-east-1"))
    return StoreSeeder(registry, ROOT, "broker:9092", APP, STORE)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaDeployed]:
    synth = synthesize_app(KAFKA)
    broker = FakeBroker()
    with (
        mock_aws(),
        enforced_iam() as log,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(snapshotter_module, "describe_changelog", broker.describe)
        patch.setattr(snapshotter_module, "catch_up_tasks", broker.catch_up)
        patch.setattr(seed_module, "describe_changelog", broker.describe)
        app = stand_up(synth)
        with published(app):
            done = KafkaDeployed(
                app=app,
                iam=log,
                seed_credentials=app.role_credentials(
                    SEED_ROLE, output_policy(app, names.OUTPUT_KAFKA_STREAMS_SEED_POLICY)
                ),
                snapshot_credentials=app.role_credentials(
                    SNAPSHOT_ROLE, output_policy(app, names.OUTPUT_KAFKA_STREAMS_SNAPSHOT_POLICY)
                ),
            )
            # Two snapshot runs: the first from the changelog's start, the second continuing
            # the first (downloaded under the policy), each registered the AWS way.
            for end in (100, 250):
                broker.end = dict.fromkeys(PARTITIONS, end)
                with acting_as(done.snapshot_credentials):
                    run = _snapshotter().snapshot(work_dir=tmp_path_factory.mktemp("scratch"))
                done.runs.append(run)
                keys = [r.written.manifest_key for r in run if r.written is not None]
                done.registered.append(_register(app, *keys))
            done.state_dir = tmp_path_factory.mktemp("state")
            with acting_as(done.seed_credentials):
                done.seeded = _seeder().seed(done.state_dir)
            yield done


def _refused(call: Any, **kwargs: Any) -> None:
    with pytest.raises(ClientError) as refused:
        call(**kwargs)
    assert refused.value.response["Error"]["Code"] == "AccessDenied", refused.value.response


def _of(deployed: KafkaDeployed, role: str) -> list[Decision]:
    return [d for d in deployed.iam.decisions if f"assumed-role/{role}/" in d.principal]


@pytest.fixture
def probe(deployed: KafkaDeployed) -> Iterator[KafkaDeployed]:
    """Calls made here are probes, not the steps' paths: kept out of the path log."""
    mark = len(deployed.iam.decisions)
    yield deployed
    del deployed.iam.decisions[mark:]


# --- the real paths, under the output policies ---------------------------------------------


def test_the_stack_outputs_both_policies_and_configures_the_layout(
    deployed: KafkaDeployed,
) -> None:
    outputs = deployed.app.synth.template_json["Outputs"]
    assert {
        names.OUTPUT_KAFKA_STREAMS_SEED_POLICY,
        names.OUTPUT_KAFKA_STREAMS_SNAPSHOT_POLICY,
    } <= set(outputs)
    for name in ("register", "gc"):
        variable = deployed.app.environment(name)["SNAPLEDGER_LAYOUTS"]
        assert json.loads(variable) == {t: {"layout": "kafka-streams"} for t in (TOPIC, OTHER)}


def test_the_snapshotter_writes_snapshots_that_register_under_its_policy(
    deployed: KafkaDeployed,
) -> None:
    first, second = deployed.runs
    assert [(r.partition, r.base_snapshot_id, r.written.lsn) for r in first] == [
        (p, None, 99) for p in PARTITIONS
    ]
    # the second run downloaded the first (list + get under the policy) and continued it
    assert [(r.base_snapshot_id, r.written.lsn) for r in second] == [
        (f.written.snapshot_id, 249) for f in first
    ]
    for answer in deployed.registered:
        assert answer["ok"], answer
        assert [r["outcome"] for r in answer["records"]] == ["became_latest"] * len(PARTITIONS)


def test_the_seed_places_the_latest_snapshot_under_its_policy(deployed: KafkaDeployed) -> None:
    assert deployed.state_dir is not None
    latest = {r.partition: r.written for r in deployed.runs[-1]}
    assert [(s.task, s.outcome, s.snapshot_id, s.lsn) for s in deployed.seeded] == [
        (f"0_{p}", "seeded", latest[p].snapshot_id, 249) for p in PARTITIONS
    ]
    store = deployed.state_dir / APP / "0_1" / "rocksdb" / STORE
    assert sorted(p.name for p in store.iterdir()) == ["000012.sst", "000013.sst", "CURRENT"]


def test_no_call_was_refused_and_every_grant_was_used(deployed: KafkaDeployed) -> None:
    for role, granted in ((SEED_ROLE, SEED_CALLS), (SNAPSHOT_ROLE, SNAPSHOT_CALLS)):
        decisions = _of(deployed, role)
        assert [f"{d.action} {d.resource}" for d in decisions if not d.allowed] == []
        assert {d.action for d in decisions} == granted, role
        for d in decisions:
            if d.action.startswith("s3:"):
                where = str(
                    d.context.get("s3:prefix", d.resource.removeprefix(f"arn:aws:s3:::{BUCKET}/"))
                )
                assert where.startswith(f"snapshots/{TOPIC}/"), d
        invoked = {d.resource for d in decisions if d.action == "lambda:InvokeFunction"}
        assert invoked == {function_arn("snapledger-query")}
    manifests = [
        d
        for d in _of(deployed, SNAPSHOT_ROLE)
        if d.action == "s3:PutObject" and d.resource.endswith("/_manifest.json")
    ]
    assert len(manifests) == 2 * len(PARTITIONS)
    assert all(d.context.get("s3:if-none-match") == "*" for d in manifests)
    # the store's files too are created only if absent (SnapshotWriter.put_file)
    files = [
        d
        for d in _of(deployed, SNAPSHOT_ROLE)
        if d.action == "s3:PutObject" and not d.resource.endswith("/_manifest.json")
    ]
    assert files and all(d.context.get("s3:if-none-match") == "*" for d in files)


# --- what the policies do not grant ----------------------------------------------------------


def test_the_seed_policy_cannot_write_a_snapshot(probe: KafkaDeployed) -> None:
    # The snapshotter's real path under the seeding policy: refused at its first write.
    with acting_as(probe.seed_credentials), pytest.raises(SnapledgerError) as refused:
        _snapshotter().snapshot([0], work_dir=None)
    assert "AccessDenied" in str(refused.value)
    denied = [d for d in _of(probe, SEED_ROLE) if not d.allowed]
    assert [d.action for d in denied] == ["s3:PutObject"]
    seed = probe.app.role_credentials(
        "ks-seed-probe", output_policy(probe.app, names.OUTPUT_KAFKA_STREAMS_SEED_POLICY)
    )
    s3 = probe.app._client_with(seed, "s3")
    folder = probe.runs[-1][0].written.prefix
    for key in (folder + "000099.sst", folder + "_manifest.json"):
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x")
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
    _refused(s3.delete_object, Bucket=BUCKET, Key=folder + "CURRENT")


def test_the_snapshot_policy_never_overwrites_a_manifest_nor_leaves_its_topic(
    probe: KafkaDeployed,
) -> None:
    app = probe.app
    s3 = app._client_with(probe.snapshot_credentials, "s3")
    written = probe.runs[-1][0].written
    # a snapshot file: yes, multipart too; a new manifest only with If-None-Match
    fresh = f"snapshots/{TOPIC}/0/{300:020d}-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/"
    s3.put_object(Bucket=BUCKET, Key=fresh + "000040.sst", Body=b"x")
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=fresh + "000041.sst")
    s3.abort_multipart_upload(Bucket=BUCKET, Key=fresh + "000041.sst", UploadId=upload["UploadId"])
    _refused(s3.put_object, Bucket=BUCKET, Key=fresh + "_manifest.json", Body=b"{}")
    _refused(s3.put_object, Bucket=BUCKET, Key=written.manifest_key, Body=b"{}")
    # an existing manifest: If-None-Match is allowed by IAM, and S3 refuses it (412)
    with pytest.raises(ClientError) as exists:
        s3.put_object(Bucket=BUCKET, Key=written.manifest_key, Body=b"{}", IfNoneMatch="*")
    assert exists.value.response["Error"]["Code"] == "PreconditionFailed"
    _refused(s3.delete_object, Bucket=BUCKET, Key=written.prefix + "CURRENT")
    # snapledger's pointers, other streams, the bucket's other prefixes: refused
    for key in (
        f"snapshots/{TOPIC}/0/latest.json",
        f"snapshots/{TOPIC}/generation.json",
        f"snapshots/orders/0/{300:020d}-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/000040.sst",
        f"changelog/{TOPIC}/0/x.parquet",
        "x.sst",
    ):
        _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"x", IfNoneMatch="*")
        _refused(s3.get_object, Bucket=BUCKET, Key=key)
    for prefix in ("snapshots/", f"snapshots/{TOPIC}", "snapshots/orders/", ""):
        _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=prefix)
    # the other functions: not invocable
    aws_lambda = app._client_with(probe.snapshot_credentials, "lambda")
    with pytest.raises(ClientError) as refused:  # moto answers Lambda's refusal in XML
        aws_lambda.invoke(FunctionName="snapledger-gc", Payload=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert "not authorized to perform: lambda:InvokeFunction" in str(refused.value)
