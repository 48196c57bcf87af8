"""The events Pipe as synthesized: stream records of the ledger → domain events on the bus.

Nothing here reads the Pipe's settings from the CDK code: the filter pattern, the
enrichment function (its handler and its code asset in cdk.out), the detail-type path and
the source all come from the synthesized template, and the handler is imported from the
asset directory CDK uploads, in a fresh interpreter, not from the repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra import names
from snapledger.adapters.dynamodb_codec import event_item
from snapledger.models.bus_events import (
    LedgerEventUndecodable,
    event_type_name,
    ledger_event_models,
    published_event_models,
)
from snapledger.models.event_schema import SCHEMA_SUFFIX
from snapledger.models.schema_export import EVENT_SCHEMA_DIR
from tests.bus_events_support import (
    REPO,
    bus_event,
    event_record,
    example_event,
    json_path,
    matches,
    published_schema,
    stream_record,
    validator,
)
from tests.infra.conftest import Synthesized

UNDECODABLE = event_type_name(LedgerEventUndecodable)

# Imports the handler from the asset directory (argv[1]) and calls it once per batch read
# from stdin; writes the answers to argv[3] (stdout carries the function's logs).
_RUNNER = """
import importlib, json, sys
asset, handler_path, answers_path = sys.argv[1:4]
sys.path.insert(0, asset)
module_name, _, attribute = handler_path.rpartition(".")
module = importlib.import_module(module_name)
import snapledger
for loaded in (module, snapledger):
    if not loaded.__file__.startswith(asset):
        sys.exit(f"{loaded.__name__} came from {loaded.__file__}, not from the asset {asset}")

class Context:
    function_name = "ledger-events"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-west-2:111122223333:function:ledger-events"
    aws_request_id = "00000000-0000-4000-8000-000000000001"
    def get_remaining_time_in_millis(self):
        return 30_000

handler = getattr(module, attribute)
answers = [handler(batch, Context()) for batch in json.load(sys.stdin)]
with open(answers_path, "w") as out:
    json.dump(answers, out)
"""


@dataclass(frozen=True)
class SynthesizedPipe:
    """What the template says the Pipe does."""

    filters: list[dict[str, Any]]
    handler: str
    asset_dir: Path
    environment: dict[str, str]
    detail_type_path: str
    source: str
    view_type: str

    def accepts(self, record: dict[str, Any]) -> bool:
        return any(matches(pattern, record) for pattern in self.filters)

    def enrich(self, *batches: list[dict[str, Any]], tmp: Path) -> tuple[list[Any], str]:
        """Each batch through the enrichment handler of the asset: (answers, its logs)."""
        answers_path = tmp / "answers.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "PYTHON"))}
        done = subprocess.run(
            [sys.executable, "-c", _RUNNER, str(self.asset_dir), self.handler, str(answers_path)],
            input=json.dumps(list(batches)),
            capture_output=True,
            text=True,
            cwd=self.asset_dir,
            env={**env, **self.environment},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(answers_path.read_text()), done.stdout

    def publish(self, element: dict[str, Any]) -> dict[str, Any]:
        """The bus event for one element of the enrichment's answer, as EventBridge has it."""
        detail_type = json_path(self.detail_type_path, element)
        return bus_event(element, detail_type=detail_type, source=self.source)


def _asset_dir(synth: Synthesized, code: dict[str, Any]) -> Path:
    manifest = json.loads((synth.outdir / f"{synth.stack.artifact_id}.assets.json").read_text())
    for asset in manifest["files"].values():
        keys = {d["objectKey"] for d in asset["destinations"].values()}
        if code["S3Key"] in keys:
            assert asset["source"]["packaging"] == "zip"
            return synth.outdir / asset["source"]["path"]
    raise AssertionError(f"no asset uploads {code['S3Key']}")


@pytest.fixture(scope="module")
def pipe(synth: Synthesized) -> SynthesizedPipe:
    (resource,) = synth.resources("AWS::Pipes::Pipe").values()
    props = resource["Properties"]
    function_id, attribute = props["Enrichment"]["Fn::GetAtt"]
    assert attribute == "Arn"
    function = synth.template_json["Resources"][function_id]
    assert function["Type"] == "AWS::Lambda::Function"
    (table,) = synth.resources("AWS::DynamoDB::Table").values()
    target = props["TargetParameters"]["EventBridgeEventBusParameters"]
    variables = function["Properties"].get("Environment", {}).get("Variables", {})
    assert all(isinstance(v, str) for v in variables.values()), "resolve no deploy-time value"
    return SynthesizedPipe(
        filters=[
            json.loads(f["Pattern"]) for f in props["SourceParameters"]["FilterCriteria"]["Filters"]
        ],
        handler=function["Properties"]["Handler"],
        asset_dir=_asset_dir(synth, function["Properties"]["Code"]),
        environment=variables,
        detail_type_path=target["DetailType"],
        source=target["Source"],
        view_type=table["Properties"]["StreamSpecification"]["StreamViewType"],
    )


# --- every event type, end to end -------------------------------------------------------------


def test_a_record_of_every_event_type_becomes_its_domain_event(
    pipe: SynthesizedPipe, tmp_path: Path
) -> None:
    # Given one stream record per event type, each item written by the ledger's codec
    events = [example_event(model, seq=i) for i, model in enumerate(ledger_event_models(), 1)]
    records = [event_record(event, view_type=pipe.view_type) for event in events]
    # The Pipe's filter lets every one of them through
    assert all(pipe.accepts(record) for record in records)

    # When the Pipe hands them to its enrichment as one batch
    (answer,), logs = pipe.enrich(records, tmp=tmp_path)

    # Then each record becomes one bus event, in order, whose detail-type is the event type,
    # whose detail is exactly the model's JSON, valid against the published schema
    assert len(answer) == len(events)
    for event, element in zip(events, answer, strict=True):
        published = pipe.publish(element)
        assert published["source"] == names.LEDGER_EVENT_SOURCE
        assert published["detail-type"] == event.type
        assert published["detail"] == event.model_dump(mode="json")
        assert set(published["detail"]) == _json_names(type(event))
        errors = list(validator(published_schema(event.type)).iter_errors(published))
        assert errors == [], f"{event.type}: {[e.message for e in errors]}"
    assert '"level":"ERROR"' not in logs


def test_the_schema_of_one_type_refuses_another_types_event(
    pipe: SynthesizedPipe, tmp_path: Path
) -> None:
    # The schemas are specific: a SnapshotRegistered event is not a valid LatestAdvanced one.
    first, second = ledger_event_models()[:2]
    record = event_record(example_event(first), view_type=pipe.view_type)
    ((element,),), _ = pipe.enrich([record], tmp=tmp_path)
    published = pipe.publish(element)
    assert not validator(published_schema(event_type_name(second))).is_valid(published)


@pytest.mark.parametrize(
    ("event_name", "sort_key", "has_type", "accepted"),
    [
        ("INSERT", "EV#000000000001", True, True),
        ("MODIFY", "EV#000000000001", True, False),
        ("REMOVE", "EV#000000000001", True, False),
        ("INSERT", "HEAD", True, False),
        ("INSERT", "SNAP#00000000000000000005#01J", True, False),
        ("INSERT", "EV#000000000001", False, False),
    ],
)
def test_the_filter_passes_only_new_event_items_with_a_type(
    pipe: SynthesizedPipe, event_name: str, sort_key: str, has_type: bool, accepted: bool
) -> None:
    image = event_item(example_event(ledger_event_models()[0]))
    image["sk"] = {"S": sort_key}
    if not has_type:
        del image[names.EVENT_TYPE_ATTRIBUTE]
    record = stream_record(image, view_type=pipe.view_type, event_name=event_name)
    assert pipe.accepts(record) is accepted


# --- records the enrichment cannot decode ------------------------------------------------------


def _bad_images() -> dict[str, tuple[dict[str, Any], str]]:
    """Items that pass the filter but hold no readable event: (image, words of the reason)."""
    good = event_item(example_event(ledger_event_models()[0], seq=12))
    unknown = {**good, names.EVENT_TYPE_ATTRIBUTE: {"S": "SnapshotTeleported"}}
    missing = {k: v for k, v in good.items() if k != "command_id"}
    not_dynamodb_json = {**good, "seq": {"N": "twelve"}}
    good_type = good[names.EVENT_TYPE_ATTRIBUTE]["S"]
    return {
        # The reasons docs/events.md quotes
        "unknown type": (unknown, "unknown event type 'SnapshotTeleported': "),
        "missing field": (missing, f"the {good_type} item is malformed: command_id: required"),
        "not DynamoDB JSON": (not_dynamodb_json, "seq"),
    }


@pytest.mark.parametrize("case", sorted(_bad_images()))
def test_an_undecodable_record_is_published_as_LedgerEventUndecodable_in_its_place(
    pipe: SynthesizedPipe, synth: Synthesized, tmp_path: Path, case: str
) -> None:
    # Given a batch: a good record, then one the enrichment cannot decode, then a good one
    bad_image, reason_words = _bad_images()[case]
    before, after = (example_event(m, seq=i) for i, m in enumerate(ledger_event_models()[:2], 1))
    bad = stream_record(bad_image, view_type=pipe.view_type)
    batch = [event_record(before, view_type=pipe.view_type), bad]
    batch.append(event_record(after, view_type=pipe.view_type))
    assert all(pipe.accepts(record) for record in batch)

    # When the enrichment handles it
    (answer,), logs = pipe.enrich(batch, tmp=tmp_path)

    # Then the good events are published in order, and the bad record, in its place, as a
    # LedgerEventUndecodable naming its key and the reason, valid against its schema
    assert [e["type"] for e in answer] == [before.type, UNDECODABLE, after.type]
    assert answer[0] == before.model_dump(mode="json")
    assert answer[2] == after.model_dump(mode="json")
    undecodable = pipe.publish(answer[1])
    detail = undecodable["detail"]
    assert undecodable["detail-type"] == UNDECODABLE
    assert (detail["pk"], detail["sk"]) == (bad_image["pk"]["S"], bad_image["sk"]["S"])
    assert detail["event_type"] == bad_image["type"]["S"]
    assert reason_words in detail["reason"]
    assert detail["stream_event_id"] == bad["eventID"]
    assert detail["stream_sequence_number"] == bad["dynamodb"]["SequenceNumber"]
    assert detail["event_source_arn"] == bad["eventSourceARN"]
    assert validator(published_schema(UNDECODABLE)).is_valid(undecodable)
    # ... and logged as an error naming the key
    errors = [json.loads(line) for line in logs.splitlines() if '"level":"ERROR"' in line]
    assert [(e["pk"], e["sk"]) for e in errors] == [(detail["pk"], detail["sk"])]

    # ... and the bus sends it to the Pipe's failure queue, whose depth alarm fires
    queue = {"Fn::GetAtt": [synth.logical_id(synth.stack.events.pipe_dead_letter_queue), "Arn"]}
    to_queue = [
        rule["Properties"]
        for rule in synth.resources("AWS::Events::Rule").values()
        if any(t["Arn"] == queue for t in rule["Properties"]["Targets"])
    ]
    assert [matches(rule["EventPattern"], undecodable) for rule in to_queue] == [True]
    assert to_queue[0]["EventBusName"] == {"Ref": synth.logical_id(synth.stack.events.bus)}
    assert not matches(to_queue[0]["EventPattern"], pipe.publish(answer[0]))


def test_a_record_without_a_new_image_is_undecodable_not_a_failed_batch(
    pipe: SynthesizedPipe, tmp_path: Path
) -> None:
    record = event_record(example_event(ledger_event_models()[0]), view_type=pipe.view_type)
    del record["dynamodb"]["NewImage"]
    ((element,),), _ = pipe.enrich([record], tmp=tmp_path)
    assert element["type"] == UNDECODABLE
    assert "NewImage" in element["reason"]
    assert element["sk"] == record["dynamodb"]["Keys"]["sk"]["S"]


# --- the resources around it -------------------------------------------------------------------


def _policy_statements(synth: Synthesized, role: Any) -> list[dict[str, Any]]:
    role_ref = {"Ref": synth.logical_id(role)}
    return [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        if role_ref in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_pipe_role_invokes_exactly_the_enrichment(synth: Synthesized) -> None:
    enrichment = synth.stack.events.enrichment
    statements = _policy_statements(synth, synth.stack.events.pipe_role)
    invoking = [s for s in statements if "lambda:" in json.dumps(s["Action"])]
    assert len(invoking) == 1
    assert _as_list(invoking[0]["Action"]) == ["lambda:InvokeFunction"]
    assert _as_list(invoking[0]["Resource"]) == [
        {"Fn::GetAtt": [synth.logical_id(enrichment), "Arn"]}
    ]


def test_the_enrichment_may_only_write_its_own_logs(synth: Synthesized) -> None:
    enrichment = synth.stack.events.enrichment
    assert enrichment is not None
    props = synth.template_json["Resources"][synth.logical_id(enrichment)]["Properties"]
    log_group = props["LoggingConfig"]["LogGroup"]["Ref"]
    statements = _policy_statements(synth, enrichment.role)
    assert statements, "the enrichment's role has a policy"
    for statement in statements:
        if statement["Effect"] == "Deny":
            continue  # the bucket-history guardrail every snapledger role carries
        assert all(a.startswith("logs:") for a in _as_list(statement["Action"]))
        assert _as_list(statement["Resource"]) == [{"Fn::GetAtt": [log_group, "Arn"]}]
    role = synth.template_json["Resources"][synth.logical_id(enrichment.role)]["Properties"]
    assert "ManagedPolicyArns" not in role


def test_the_enrichment_runs_the_functions_code_asset_runtime_and_layer(
    synth: Synthesized,
) -> None:
    resources = synth.template_json["Resources"]
    enrichment = resources[synth.logical_id(synth.stack.events.enrichment)]["Properties"]
    register = resources[synth.logical_id(synth.stack.functions.functions["register"])]
    for prop in ("Code", "Runtime", "Architectures", "Layers"):
        assert enrichment[prop] == register["Properties"][prop], prop
    assert enrichment["Handler"] == f"functions.{names.ENRICHMENT_FUNCTION}.handler"
    assert (REPO / "functions" / f"{names.ENRICHMENT_FUNCTION}.py").is_file()


def test_the_enrichment_has_error_and_throttle_alarms(synth: Synthesized) -> None:
    ref = {"Ref": synth.logical_id(synth.stack.events.enrichment)}
    alarmed = {
        alarm["Properties"]["MetricName"]
        for alarm in synth.resources("AWS::CloudWatch::Alarm").values()
        if {"Name": "FunctionName", "Value": ref} in alarm["Properties"].get("Dimensions", [])
    }
    assert alarmed == {"Errors", "Throttles"}


def test_the_schema_registry_holds_every_published_schema(synth: Synthesized) -> None:
    registry = synth.stack.events.schema_registry
    registry_props = synth.template_json["Resources"][synth.logical_id(registry)]["Properties"]
    assert registry_props["RegistryName"] == f"{synth.stack.stack_name}-ledger-events"
    in_registry = {
        schema["Properties"]["SchemaName"]: schema["Properties"]
        for schema in synth.resources("AWS::EventSchemas::Schema").values()
        if schema["Properties"]["RegistryName"]
        == {"Fn::GetAtt": [synth.logical_id(registry), "RegistryName"]}
    }
    expected = {event_type_name(m) for m in published_event_models()}
    assert set(in_registry) == {f"{names.LEDGER_EVENT_SOURCE}@{t}" for t in expected}
    for event_type in expected:
        schema = in_registry[f"{names.LEDGER_EVENT_SOURCE}@{event_type}"]
        assert schema["Type"] == "JSONSchemaDraft4"
        path = REPO / EVENT_SCHEMA_DIR / f"{event_type}{SCHEMA_SUFFIX}"
        assert schema["Content"] == path.read_text(encoding="utf-8")
    output = synth.template_json["Outputs"][names.OUTPUT_EVENT_SCHEMA_REGISTRY]
    assert output["Value"] == {"Fn::GetAtt": [synth.logical_id(registry), "RegistryName"]}


def test_the_pipe_batches_retries_and_leaves_the_bus_time_to_eventbridge(
    synth: Synthesized,
) -> None:
    # docs/events.md: batches of up to 10 records, 10 retries before the failure queue, and
    # the envelope's ``time`` is when the event was put (no Time parameter: ``detail.at``
    # is the ledger's time)
    (resource,) = synth.resources("AWS::Pipes::Pipe").values()
    props = resource["Properties"]
    stream = props["SourceParameters"]["DynamoDBStreamParameters"]
    assert (stream["BatchSize"], stream["MaximumRetryAttempts"]) == (10, 10)
    target = props["TargetParameters"]["EventBridgeEventBusParameters"]
    assert set(target) == {"Source", "DetailType"}


def _json_names(model: Any) -> set[str]:
    """The names a model's JSON gives its fields (an alias where one is declared)."""
    return {
        field.serialization_alias or field.alias or name
        for name, field in model.model_fields.items()
    }
