"""Every resource of the stack, and the properties that make it what the design asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra import names
from infra.app import build_app
from infra.constants import (
    EMR_RELEASE_LABEL,
    EVENT_SOURCE,
    FUNCTION_NAMES,
    LAUNCH_DETAIL_TYPES,
    METRICS_NAMESPACE,
    OUTPUT_BUCKET,
    OUTPUT_EMR_APPLICATION,
    OUTPUT_EVENT_BUS,
    OUTPUT_TABLE,
    SERVICE_NAME,
)
from infra.constructs.function_specs import REQUIRED_ACCOUNT_CONCURRENCY, SPECS
from snapledger import settings
from snapledger.adapters.table_definition import TTL_ATTRIBUTE
from tests.infra.conftest import Synthesized


def _ref(synth: Synthesized, construct: Any) -> dict[str, str]:
    return {"Ref": synth.logical_id(construct)}


def _arn(synth: Synthesized, construct: Any) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [synth.logical_id(construct), "Arn"]}


# --- storage ---------------------------------------------------------------------------------


def test_snapshot_bucket_is_private_encrypted_versioned_and_logged(synth: Synthesized) -> None:
    # Given the synthesized stack
    bucket = synth.resources("AWS::S3::Bucket")[synth.logical_id(synth.stack.storage.bucket)]
    props = bucket["Properties"]

    # Then the bucket blocks public access, encrypts, versions and logs access
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["LoggingConfiguration"]["DestinationBucketName"] == _ref(
        synth, synth.stack.storage.log_bucket
    )
    # And GC really frees space: noncurrent versions expire, partial uploads are aborted
    rules = props["LifecycleConfiguration"]["Rules"]
    noncurrent = [r for r in rules if "NoncurrentVersionExpiration" in r]
    assert noncurrent
    assert noncurrent[0]["NoncurrentVersionExpiration"]["NoncurrentDays"] >= 1
    assert any("AbortIncompleteMultipartUpload" in r for r in rules)
    # And the jobs' scratch space does not grow forever when a job dies mid-way
    assert any(r.get("Prefix") == names.STAGING_PREFIX and r["ExpirationInDays"] for r in rules)
    assert bucket["DeletionPolicy"] == "Retain"


def test_both_buckets_refuse_plain_http(synth: Synthesized) -> None:
    # Given both buckets' policies
    policies = synth.resources("AWS::S3::BucketPolicy").values()
    secured = {
        json.dumps(p["Properties"]["Bucket"])
        for p in policies
        if any(
            s["Effect"] == "Deny"
            and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
    }
    # Then each bucket has a deny-non-TLS statement
    for bucket in (synth.stack.storage.bucket, synth.stack.storage.log_bucket):
        assert json.dumps(_ref(synth, bucket)) in secured


def test_object_created_notifications_route_manifests_and_changelog(synth: Synthesized) -> None:
    fns = synth.stack.functions.functions
    synth.template.has_resource_properties(
        "Custom::S3BucketNotifications",
        {
            "BucketName": _ref(synth, synth.stack.storage.bucket),
            "NotificationConfiguration": {
                "LambdaFunctionConfigurations": Match.array_equals(
                    [
                        {
                            "Events": ["s3:ObjectCreated:*"],
                            "Filter": {
                                "Key": {
                                    "FilterRules": Match.array_with(
                                        [
                                            {"Name": "suffix", "Value": "_manifest.json"},
                                            {"Name": "prefix", "Value": "snapshots/"},
                                        ]
                                    )
                                }
                            },
                            "LambdaFunctionArn": _arn(synth, fns["register"]),
                        },
                        {
                            "Events": ["s3:ObjectCreated:*"],
                            "Filter": {
                                "Key": {
                                    "FilterRules": Match.array_with(
                                        [
                                            {"Name": "suffix", "Value": ".parquet"},
                                            {"Name": "prefix", "Value": "changelog/"},
                                        ]
                                    )
                                }
                            },
                            "LambdaFunctionArn": _arn(synth, fns["track_changelog"]),
                        },
                    ]
                )
            },
        },
    )


# --- table -----------------------------------------------------------------------------------


def test_table_is_on_demand_with_pitr_protection_stream_and_ttl(synth: Synthesized) -> None:
    synth.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    "DeletionProtectionEnabled": True,
                    "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
                    "TimeToLiveSpecification": {"AttributeName": TTL_ATTRIBUTE, "Enabled": True},
                }
            ),
            "DeletionPolicy": "Retain",
        },
    )


def test_the_bus_archives_the_ledger_events_for_a_year_by_default(synth: Synthesized) -> None:
    (archive,) = synth.resources("AWS::Events::Archive").values()
    props = archive["Properties"]
    assert props["RetentionDays"] == 365
    assert props["EventPattern"] == {"source": [names.LEDGER_EVENT_SOURCE]}
    assert props["SourceArn"] == {"Fn::GetAtt": [synth.logical_id(synth.stack.events.bus), "Arn"]}
    query = synth.stack.functions.functions["query"]
    env = synth.template_json["Resources"][synth.logical_id(query)]["Properties"]["Environment"]
    assert env["Variables"][settings.ENV_EVENT_ARCHIVE_ARN] == {
        "Fn::GetAtt": [synth.logical_id(synth.stack.events.archive), "Arn"]
    }


def test_ttl_window_and_archive_retention_come_from_context() -> None:
    from aws_cdk import App

    from infra.config import StackConfig

    app = App(context={names.CTX_LEDGER_TTL_DAYS: "7", names.CTX_EVENT_ARCHIVE_RETENTION_DAYS: 0})
    config = StackConfig.from_context(app.node)
    assert (config.ledger_ttl_days, config.event_archive_retention_days) == (7, 0)
    with pytest.raises(ValueError, match="days >= 0"):
        StackConfig.from_context(App(context={names.CTX_LEDGER_TTL_DAYS: "-1"}).node)


# --- functions -------------------------------------------------------------------------------


def test_every_function_is_python312_arm64_with_powertools_layer(synth: Synthesized) -> None:
    # Given the Powertools layer parameter (public SSM parameter, resolved at deploy time)
    layer_params = [
        name
        for name, p in synth.template_json["Parameters"].items()
        if p.get("Default") == names.POWERTOOLS_LAYER_SSM_PARAMETER
    ]
    assert len(layer_params) == 1
    for name in FUNCTION_NAMES:
        function = synth.stack.functions.functions[name]
        props = synth.template_json["Resources"][synth.logical_id(function)]["Properties"]
        # Then each function runs our handler on python3.12+/arm64 with that layer
        assert props["Handler"] == f"functions.{name}.handler"
        assert props["Runtime"].startswith("python3.")
        assert int(props["Runtime"].split(".")[1]) >= 12
        assert props["Architectures"] == ["arm64"]
        assert props["Layers"] == [{"Ref": layer_params[0]}]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert "LogGroup" in props["LoggingConfig"]


def test_functions_share_one_code_asset_and_distinct_roles(synth: Synthesized) -> None:
    functions = [
        synth.template_json["Resources"][synth.logical_id(f)]["Properties"]
        for f in synth.stack.functions.functions.values()
    ]
    assert len({json.dumps(p["Code"], sort_keys=True) for p in functions}) == 1
    assert len({json.dumps(p["Role"], sort_keys=True) for p in functions}) == len(FUNCTION_NAMES)


def test_function_environment_names_come_from_settings(synth: Synthesized) -> None:
    for name, function in synth.stack.functions.functions.items():
        env = synth.template_json["Resources"][synth.logical_id(function)]["Properties"][
            "Environment"
        ]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE_NAME
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
        assert env[settings.ENV_TABLE] == _ref(synth, synth.stack.ledger.table)
        assert env[settings.ENV_ROOT] == {
            "Fn::Join": ["", ["s3://", _ref(synth, synth.stack.storage.bucket)]]
        }
        assert env[settings.ENV_EVENT_BUS] == _ref(synth, synth.stack.events.bus)
        assert env[settings.ENV_LEDGER_TTL_DAYS] == str(settings.DEFAULT_LEDGER_TTL_DAYS)
        archive_vars = {settings.ENV_EVENT_BUS_ARN, settings.ENV_EVENT_ARCHIVE_ARN}
        assert (archive_vars <= set(env)) is (name == "query")
        job_vars = {
            settings.ENV_EMR_APPLICATION_ID,
            settings.ENV_EMR_JOB_ROLE_ARN,
            settings.ENV_JOB_ENTRYPOINT,
            settings.ENV_JOB_PY_FILES,
        }
        if name in names.JOB_FUNCTIONS:
            assert job_vars <= set(env)
            assert env[settings.ENV_JOB_ENTRYPOINT]["Fn::Sub"].startswith("s3://")
            assert env[settings.ENV_JOB_ENTRYPOINT]["Fn::Sub"].endswith(".py")
            assert env[settings.ENV_JOB_PY_FILES]["Fn::Sub"].endswith(".zip")
        else:
            assert not job_vars & set(env)


def test_no_function_reserves_concurrency_by_default(synth: Synthesized) -> None:
    # A new account (quota 10 or 50) can deploy: nothing is reserved from its pool
    for resource in synth.resources("AWS::Lambda::Function").values():
        assert "ReservedConcurrentExecutions" not in resource["Properties"]


@pytest.mark.slow
def test_reserved_concurrency_opt_in_caps_the_table_writers(tmp_path: Path) -> None:
    # Given -c reservedConcurrency=true
    app, stack = build_app(context={names.CTX_RESERVED_CONCURRENCY: "true"}, outdir=str(tmp_path))
    template = app.synth().get_stack_by_name(stack.stack_name).template
    reserved = {}
    for name, function in stack.functions.functions.items():
        props = template["Resources"][stack.get_logical_id(function.node.default_child)]
        reserved[name] = props["Properties"].get("ReservedConcurrentExecutions")
    # Then the ledger writers are capped (gc runs alone) and query is not
    assert reserved == {name: SPECS[name].reserved for name in reserved}
    assert reserved["gc"] == 1 + names.GC_SHARD_WORKERS and reserved["query"] is None
    # and the quota docs/deploy.md states is what Lambda needs for that reservation
    assert sum(r or 0 for r in reserved.values()) + 100 == REQUIRED_ACCOUNT_CONCURRENCY
    deploy_doc = (names.REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert f"at least {REQUIRED_ACCOUNT_CONCURRENCY}" in deploy_doc


def test_async_functions_fail_into_encrypted_tls_only_queues(synth: Synthesized) -> None:
    configs = synth.resources("AWS::Lambda::EventInvokeConfig").values()
    by_function = {c["Properties"]["FunctionName"]["Ref"]: c["Properties"] for c in configs}
    queues = synth.stack.functions.dead_letter_queues
    assert set(queues) == set(names.ASYNC_FUNCTIONS)
    for name in names.ASYNC_FUNCTIONS:
        config = by_function[synth.logical_id(synth.stack.functions.functions[name])]
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == _arn(synth, queues[name])
        assert config["MaximumRetryAttempts"] == 2
    assert synth.logical_id(synth.stack.functions.functions["query"]) not in by_function

    # Every queue (function failures and the Pipe's) is encrypted and refuses plain HTTP
    for queue in synth.resources("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    tls_denied = {
        json.dumps(p["Properties"]["Queues"][0])
        for p in synth.resources("AWS::SQS::QueuePolicy").values()
        if any(
            s["Effect"] == "Deny"
            and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
    }
    assert len(tls_denied) == len(synth.resources("AWS::SQS::Queue"))


def test_log_groups_have_retention(synth: Synthesized) -> None:
    groups = synth.resources("AWS::Logs::LogGroup").values()
    assert len(groups) == len(FUNCTION_NAMES) + 1  # and the events Pipe's enrichment
    assert all(g["Properties"]["RetentionInDays"] == 30 for g in groups)


# --- EventBridge ----------------------------------------------------------------------------


def _rule_for(synth: Synthesized, function_name: str) -> dict[str, Any]:
    arn = _arn(synth, synth.stack.functions.functions[function_name])
    rules: list[dict[str, Any]] = [
        r["Properties"]
        for r in synth.resources("AWS::Events::Rule").values()
        if any(t["Arn"] == arn for t in r["Properties"]["Targets"])
    ]
    assert len(rules) == 1, f"expected one rule targeting {function_name}"
    return rules[0]


def test_gc_runs_on_a_schedule(synth: Synthesized) -> None:
    rule = _rule_for(synth, "gc")
    assert rule["ScheduleExpression"] == f"rate({names.GC_SCHEDULE_HOURS} hours)"
    # the Scheduled Event itself, which gc reads as a full run (not a console payload)
    assert "Input" not in rule["Targets"][0]


def test_emr_state_changes_of_this_application_reach_job_state(synth: Synthesized) -> None:
    rule = _rule_for(synth, "job_state")
    assert "EventBusName" not in rule  # the default bus, where AWS services publish
    assert rule["EventPattern"] == {
        "source": ["aws.emr-serverless"],
        "detail-type": ["EMR Serverless Job Run State Change"],
        "detail": {
            "applicationId": [
                {"Fn::GetAtt": [synth.logical_id(synth.stack.spark.application), "ApplicationId"]}
            ]
        },
    }


def test_launch_requests_on_the_custom_bus_reach_launch(synth: Synthesized) -> None:
    rule = _rule_for(synth, "launch")
    assert rule["EventBusName"] == _ref(synth, synth.stack.events.bus)
    assert rule["EventPattern"] == {
        "source": [EVENT_SOURCE],
        "detail-type": list(LAUNCH_DETAIL_TYPES),
    }


def test_rule_targets_retry_then_dead_letter(synth: Synthesized) -> None:
    for name in ("gc", "job_state", "launch"):
        target = _rule_for(synth, name)["Targets"][0]
        queue = synth.stack.functions.dead_letter_queues[name]
        assert target["DeadLetterConfig"] == {"Arn": _arn(synth, queue)}
        assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1


def test_pipe_forwards_only_event_items_from_the_stream_to_the_bus(synth: Synthesized) -> None:
    (pipe,) = synth.resources("AWS::Pipes::Pipe").values()
    props = pipe["Properties"]
    table_id = synth.logical_id(synth.stack.ledger.table)
    assert props["Source"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert props["Target"] == _arn(synth, synth.stack.events.bus)
    assert props["RoleArn"] == _arn(synth, synth.stack.events.pipe_role)
    (only,) = props["SourceParameters"]["FilterCriteria"]["Filters"]
    pattern = json.loads(only["Pattern"])
    assert pattern["eventName"] == ["INSERT"]
    assert pattern["dynamodb"]["Keys"]["sk"]["S"] == [{"prefix": "EV#"}]
    stream = props["SourceParameters"]["DynamoDBStreamParameters"]
    assert stream["DeadLetterConfig"]["Arn"] == _arn(
        synth, synth.stack.events.pipe_dead_letter_queue
    )
    # Each batch goes through the enrichment, whose answer holds one domain event per record
    # (tests/infra/test_ledger_events.py runs it as synthesized)
    assert props["Enrichment"] == _arn(synth, synth.stack.events.enrichment)
    target = props["TargetParameters"]["EventBridgeEventBusParameters"]
    assert target["Source"] == names.LEDGER_EVENT_SOURCE != EVENT_SOURCE
    assert target["DetailType"] == "$.type"


def test_pipe_role_is_trusted_only_by_this_pipe(synth: Synthesized) -> None:
    role = synth.template_json["Resources"][synth.logical_id(synth.stack.events.pipe_role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pipes.amazonaws.com"}
    assert "aws:SourceArn" in statement["Condition"]["StringEquals"]


# --- EMR Serverless ----------------------------------------------------------------------


def test_emr_application_release_capacity_and_auto_stop(synth: Synthesized) -> None:
    synth.template.has_resource_properties(
        "AWS::EMRServerless::Application",
        {
            "ReleaseLabel": EMR_RELEASE_LABEL,
            "Type": "SPARK",
            "Architecture": "ARM64",
            "AutoStartConfiguration": {"Enabled": True},
            "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": Match.any_value()},
            "MaximumCapacity": {"Cpu": "16 vCPU", "Memory": "64 GB", "Disk": Match.any_value()},
        },
    )
    assert (
        "InitialCapacity"
        not in next(iter(synth.resources("AWS::EMRServerless::Application").values()))["Properties"]
    )


def test_functions_that_start_jobs_size_them_within_the_application_capacity(
    synth: Synthesized,
) -> None:
    # The env vars the launching functions read are the application's MaximumCapacity
    [app] = synth.resources("AWS::EMRServerless::Application").values()
    capacity = app["Properties"]["MaximumCapacity"]
    expected = {
        settings.ENV_EMR_MAX_VCPU: capacity["Cpu"].removesuffix(" vCPU"),
        settings.ENV_EMR_MAX_MEMORY_GB: capacity["Memory"].removesuffix(" GB"),
        settings.ENV_EMR_MAX_DISK_GB: capacity["Disk"].removesuffix(" GB"),
    }
    assert expected == {
        settings.ENV_EMR_MAX_VCPU: "16",
        settings.ENV_EMR_MAX_MEMORY_GB: "64",
        settings.ENV_EMR_MAX_DISK_GB: "200",
    }
    for name, function in synth.stack.functions.functions.items():
        env = synth.template_json["Resources"][synth.logical_id(function)]["Properties"][
            "Environment"
        ]["Variables"]
        sized = {key: env[key] for key in expected if key in env}
        assert sized == (expected if name in names.JOB_STARTING_FUNCTIONS else {}), name


def test_job_role_is_assumable_only_by_this_application(synth: Synthesized) -> None:
    role = synth.template_json["Resources"][synth.logical_id(synth.stack.spark.job_role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "emr-serverless.amazonaws.com"}
    assert statement["Condition"]["ArnLike"]["aws:SourceArn"] == _arn(
        synth, synth.stack.spark.application
    )


# --- observability -------------------------------------------------------------------------


def _alarm_metrics(synth: Synthesized) -> list[tuple[str, str, str]]:
    """(namespace, metric, first dimension value as JSON) of every alarm."""
    out = []
    for alarm in synth.resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        dims = props.get("Dimensions", [])
        out.append(
            (
                props["Namespace"],
                props["MetricName"],
                json.dumps(dims[0]["Value"], sort_keys=True) if dims else "",
            )
        )
    return out


def test_alarms_on_errors_throttles_queue_depth_and_stuck_jobs(synth: Synthesized) -> None:
    alarms = _alarm_metrics(synth)
    for function in synth.stack.functions.functions.values():
        ref = json.dumps(_ref(synth, function), sort_keys=True)
        assert ("AWS/Lambda", "Errors", ref) in alarms
        assert ("AWS/Lambda", "Throttles", ref) in alarms
    queues = [*synth.stack.functions.dead_letter_queues.values()]
    queues.append(synth.stack.events.pipe_dead_letter_queue)
    for queue in queues:
        name = json.dumps({"Fn::GetAtt": [synth.logical_id(queue), "QueueName"]}, sort_keys=True)
        assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", name) in alarms
    assert (METRICS_NAMESPACE, names.STUCK_JOBS_METRIC, json.dumps(SERVICE_NAME)) in alarms
    # gc's failed streams and unrepaired pointers, under the names gc publishes them
    from snapledger.entrypoints import gc as gc_entrypoint

    for metric in (
        gc_entrypoint.STREAMS_FAILED_METRIC,
        gc_entrypoint.POINTERS_UNREPAIRED_METRIC,
        gc_entrypoint.LATESTS_BROKEN_METRIC,
    ):
        assert metric in (
            names.GC_STREAMS_FAILED_METRIC,
            names.GC_POINTERS_UNREPAIRED_METRIC,
            names.GC_RESTATE_LATESTS_BROKEN_METRIC,
        )
        assert (METRICS_NAMESPACE, metric, json.dumps(SERVICE_NAME)) in alarms


def test_dashboards_exist(synth: Synthesized) -> None:
    # the stack's, and the per-stream one (test_stream_alarms.py)
    synth.template.resource_count_is("AWS::CloudWatch::Dashboard", 2)


# --- console test events ---------------------------------------------------------------------


def test_console_test_events_for_launch_query_and_gc(synth: Synthesized) -> None:
    # (the other schemas are the ledger events', in their own registry: test_ledger_events.py)
    ledger_events = {
        "Fn::GetAtt": [synth.logical_id(synth.stack.events.schema_registry), "RegistryName"]
    }
    schemas = synth.resources("AWS::EventSchemas::Schema")
    by_function: dict[str, dict[str, Any]] = {}
    for schema in schemas.values():
        props = schema["Properties"]
        if props["RegistryName"] == ledger_events:
            continue
        assert props["RegistryName"] == "lambda-testevent-schemas"
        assert props["Type"] == "OpenApi3"
        prefix, ref, suffix = props["SchemaName"]["Fn::Join"][1]
        assert (prefix, suffix) == ("_", "-schema")
        by_function[ref["Ref"]] = json.loads(props["Content"])
    for name in names.CONSOLE_EVENT_FUNCTIONS:
        content = by_function[synth.logical_id(synth.stack.functions.functions[name])]
        assert content["openapi"].startswith("3.")
        examples = content["components"]["examples"]
        for path in sorted(names.EVENTS_DIR.glob(f"{name}-*.json")):
            example = path.stem.removeprefix(f"{name}-")
            assert examples[example]["value"] == json.loads(path.read_text(encoding="utf-8"))
    launch = by_function[synth.logical_id(synth.stack.functions.functions["launch"])]
    assert "restore-latest" in launch["components"]["examples"]


def test_test_event_registry_is_created_if_missing(synth: Synthesized) -> None:
    (registry,) = synth.resources("Custom::AWS").values()
    create = json.loads(json.dumps(registry["Properties"]["Create"]))
    assert "CreateRegistry" in json.dumps(create)
    assert "ConflictException" in json.dumps(create)


# --- outputs ---------------------------------------------------------------------------------


def test_outputs_the_cli_reads(synth: Synthesized) -> None:
    outputs = synth.template_json["Outputs"]
    assert outputs[OUTPUT_TABLE]["Value"] == _ref(synth, synth.stack.ledger.table)
    assert outputs[OUTPUT_BUCKET]["Value"] == _ref(synth, synth.stack.storage.bucket)
    assert outputs[OUTPUT_EVENT_BUS]["Value"] == _ref(synth, synth.stack.events.bus)
    assert outputs[OUTPUT_EMR_APPLICATION]["Value"] == {
        "Fn::GetAtt": [synth.logical_id(synth.stack.spark.application), "ApplicationId"]
    }
    for name in FUNCTION_NAMES:
        assert outputs[names.function_output_key(name)]["Value"] == _ref(
            synth, synth.stack.functions.functions[name]
        )
