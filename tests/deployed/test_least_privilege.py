"""Least privilege where S3 and EventBridge allow conditions (issue 27, row 8), proven under
the synthesized policies with the conditions evaluated (iam_emulation.py).

- Every function path ran under its conditioned role (test_function_roles.py: nothing was
  refused); here, the conditions were really in play: each listing carried its prefix and
  each pointer write its If-None-Match or If-Match.
- The forbidden calls are refused: the job role overwriting a snapshot's key or writing a
  pointer, register writing a latest.json inside a snapshot prefix, a listing outside a
  role's prefixes; and the bus's policy refuses a ledger event from anyone but the Pipe.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra.constructs.function_grants import LISTED_PREFIXES
from snapledger.layout import latest_pointer_key
from tests.deployed.conftest import Deployed
from tests.deployed.deployment import BUCKET
from tests.deployed.iam_emulation import ACCOUNT, DENY, NEUTRAL, PARTITION, evaluate
from tests.deployed.scenario import STREAM

pytestmark = pytest.mark.slow

SNAPSHOT = f"snapshots/{STREAM}/9/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/"
OUTSIDER = f"arn:{PARTITION}:iam::{ACCOUNT}:role/some-other-app"


def _refused(call: Any, **kwargs: Any) -> None:
    with pytest.raises(ClientError) as refused:
        call(**kwargs)
    assert refused.value.response["Error"]["Code"] == "AccessDenied", refused.value.response


@pytest.fixture
def probe(deployed: Deployed) -> Any:
    """Calls made here are probes, not paths of a function: kept out of the path log."""
    mark = len(deployed.iam.decisions)
    yield deployed
    del deployed.iam.decisions[mark:]


def test_the_paths_ran_with_the_condition_keys_their_policies_test(deployed: Deployed) -> None:
    mine = [d for d in deployed.iam.decisions if "assumed-role/snapledger-" in d.principal]
    listings = [d for d in mine if d.action == "s3:ListBucket"]
    assert listings and all("s3:prefix" in d.context for d in listings)
    pointer_writes = [
        d
        for d in mine
        if d.action == "s3:PutObject" and d.resource.endswith(("/latest.json", "/generation.json"))
    ]
    assert pointer_writes
    assert all({"s3:if-none-match", "s3:if-match"} & set(d.context) for d in pointer_writes)


def test_the_job_role_only_adds_keys_under_snapshots(probe: Deployed) -> None:
    app = probe.app
    app.store.put(SNAPSHOT + "part-00000.parquet", b"registered data")
    app.store.put("_staging/job-1/part-00000.parquet", b"staged")
    s3 = app.job_role_client("s3")
    # Allowed: a conditional create, the one way a job publishes (jobs/create_only.py)
    s3.put_object(Bucket=BUCKET, Key=SNAPSHOT + "_manifest.json", Body=b"{}", IfNoneMatch="*")
    # Refused: overwriting a registered snapshot's file with a plain put ...
    _refused(s3.put_object, Bucket=BUCKET, Key=SNAPSHOT + "part-00000.parquet", Body=b"evil")
    # ... or by copying a file over it, even one of the job's own staged files (EMRFS's
    # rename: a copy with no If-None-Match), even to a new key
    staged = {"Bucket": BUCKET, "Key": "_staging/job-1/part-00000.parquet"}
    for key in ("part-00000.parquet", "part-00002.parquet"):
        _refused(s3.copy_object, Bucket=BUCKET, Key=SNAPSHOT + key, CopySource=staged)
    # ... or by a multipart upload (the job publishes each object in one PutObject)
    _refused(s3.create_multipart_upload, Bucket=BUCKET, Key=SNAPSHOT + "part-00001.parquet")
    # and the conditional create of an existing key is S3's 412, not a write
    with pytest.raises(ClientError) as exists:
        s3.put_object(
            Bucket=BUCKET, Key=SNAPSHOT + "part-00000.parquet", Body=b"evil", IfNoneMatch="*"
        )
    assert exists.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert app.store.get(SNAPSHOT + "part-00000.parquet") == b"registered data"


@pytest.mark.parametrize(
    "key",
    [
        latest_pointer_key(STREAM, 3),
        f"{SNAPSHOT}latest.json",
        f"snapshots/{STREAM}/generation.json",
        "restores/job-1/latest.json",
    ],
)
def test_the_job_role_never_writes_a_pointer(probe: Deployed, key: str) -> None:
    s3 = probe.app.job_role_client("s3")
    # not even as a conditional create, nor as a rename of a staged file
    _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"{}", IfNoneMatch="*")
    probe.app.store.put("_staging/job-1/latest.json", b"{}")
    staged = {"Bucket": BUCKET, "Key": "_staging/job-1/latest.json"}
    _refused(s3.copy_object, Bucket=BUCKET, Key=key, CopySource=staged)


def test_the_job_role_lists_only_its_prefixes(probe: Deployed) -> None:
    s3 = probe.app.job_role_client("s3")
    for prefix in ("changelog/orders/3/", "snapshots/orders/3/", "_staging/x/", "restores/x/"):
        s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    _refused(s3.list_objects_v2, Bucket=BUCKET)
    _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix="emr-logs/")


@pytest.mark.parametrize(
    "key",
    [
        f"{SNAPSHOT}latest.json",
        f"snapshots/{STREAM}/3/generation.json",
        f"snapshots/{STREAM}/3/x/y/latest.json",
    ],
)
def test_register_writes_no_pointer_but_the_lineages_own(probe: Deployed, key: str) -> None:
    s3 = probe.app.client_as("register", "s3")
    _refused(s3.put_object, Bucket=BUCKET, Key=key, Body=b"{}", IfNoneMatch="*")
    # while the lineage's own pointer is its to write
    own = latest_pointer_key("probe", 0)
    s3.put_object(Bucket=BUCKET, Key=own, Body=b"{}", IfNoneMatch="*")
    probe.app.admin.client("s3").delete_object(Bucket=BUCKET, Key=own)


@pytest.mark.parametrize("name", sorted(LISTED_PREFIXES))
def test_a_listing_outside_the_functions_prefixes_is_refused(probe: Deployed, name: str) -> None:
    s3 = probe.app.client_as(name, "s3")
    for prefix in LISTED_PREFIXES[name]:
        s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    outside = {"snapshots/", "changelog/", "restores/", "_staging/"} - set(LISTED_PREFIXES[name])
    for prefix in sorted(outside):
        _refused(s3.list_objects_v2, Bucket=BUCKET, Prefix=prefix)
    _refused(s3.list_objects_v2, Bucket=BUCKET)  # the whole bucket


def _bus_policy(deployed: Deployed) -> tuple[list[dict[str, Any]], str, str]:
    app = deployed.app
    template = app.synth.template_json["Resources"]
    statements = [
        app.resolve(r["Properties"]["Statement"])
        for r in template.values()
        if r["Type"] == "AWS::Events::EventBusPolicy"
    ]
    stack = app.synth.stack
    bus_arn = app.resolve({"Fn::GetAtt": [app.synth.logical_id(stack.events.bus), "Arn"]})
    pipe = app.resolve({"Fn::GetAtt": [app.synth.logical_id(stack.events.pipe_role), "Arn"]})
    return statements, bus_arn, pipe


@pytest.mark.parametrize(
    ("principal", "sources", "expected"),
    [
        # a forged TrimPointAdvanced from any other principal, alone or among other entries
        (OUTSIDER, ["snapledger.ledger"], DENY),
        (OUTSIDER, ["snapledger", "snapledger.ledger"], DENY),
        (f"arn:{PARTITION}:iam::210987654321:root", ["snapledger.anything"], DENY),
        # the Pipe's role publishes the ledger's events
        ("pipe", ["snapledger.ledger"], NEUTRAL),
        # launch requests (source snapledger) stay open to callers their policies allow
        (OUTSIDER, ["snapledger"], NEUTRAL),
        (OUTSIDER, ["my.app"], NEUTRAL),
    ],
)
def test_the_bus_accepts_snapledger_sources_only_from_the_pipe(
    deployed: Deployed, principal: str, sources: list[str], expected: str
) -> None:
    statements, bus_arn, pipe = _bus_policy(deployed)
    assert statements
    principal = pipe if principal == "pipe" else principal
    context = {"events:source": sources, "aws:PrincipalArn": principal}
    decision = evaluate(statements, "events:PutEvents", bus_arn, context, principal_arn=principal)
    assert decision == expected


def test_the_emulation_evaluates_conditions_as_iam_does() -> None:
    arn = "arn:aws:s3:::b"

    def listing(condition: dict[str, Any], context: dict[str, Any]) -> str:
        statement = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn}
        return evaluate([statement | {"Condition": condition}], "s3:ListBucket", arn, context)

    like = {"StringLike": {"s3:prefix": ["changelog/*"]}}
    assert listing(like, {"s3:prefix": "changelog/a/"}) == "allow"
    assert listing(like, {"s3:prefix": "snapshots/"}) == NEUTRAL
    assert listing(like, {}) == NEUTRAL  # a missing key fails a positive operator
    assert listing({"StringNotLike": {"s3:prefix": "x*"}}, {}) == "allow"  # and holds a negated
    assert listing({"Null": {"s3:prefix": "true"}}, {}) == "allow"
    assert listing({"Null": {"s3:prefix": "false"}}, {}) == NEUTRAL
    assert listing({"StringLikeIfExists": {"s3:prefix": "c*"}}, {}) == "allow"
    with pytest.raises(ValueError, match="NumericLessThan"):
        listing({"NumericLessThan": {"s3:max-keys": "10"}}, {"s3:max-keys": "5"})
    deny = {"Effect": "Deny", "Action": "s3:*", "Resource": "*"}
    allow = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn}
    assert evaluate([allow, deny], "s3:ListBucket", arn, {}) == DENY
