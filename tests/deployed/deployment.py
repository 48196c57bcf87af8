"""The synthesized app stood up in an emulated account: its resources, roles and functions.

``EmulatedDeployment`` creates in moto what the template declares that the functions touch
(the bucket, the ledger table, the EMR Serverless application, the job role), creates each
function's role from the template's policy statements with every ``Ref``/``Fn::GetAtt``/
``Fn::Join``/``Fn::Sub`` resolved to those resources, and invokes a function's handler
with its synthesized environment and that role's credentials (``sts:AssumeRole``) while
IAM is enforced (``iam_emulation``). Setup and inspection use an admin user.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3

from infra.constants import FUNCTION_NAMES
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import Clock
from snapledger.gc_settings import ENV_GC_QUEUE_URL
from snapledger.runtime import replaced, reset_runtime, runtime, runtime_override
from tests.deployed.iam_emulation import ACCOUNT, PARTITION, REGION, table_arn
from tests.functions.support import POWERTOOLS_ENV, FakeLambdaContext, sqs_event
from tests.infra.conftest import Synthesized

BUCKET = "snapledger-deployed-test"
TABLE = "snapledger-deployed-ledger"
REGISTRATION_QUEUE = "snapledger-registrations.fifo"
ADMIN = "harness-admin"
JOB_ROLE = "snapledger-spark-job"
_PSEUDO = {
    "AWS::Partition": PARTITION,
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "Snapledger",
}


# Granted, but called by the Lambda service (or the X-Ray SDK's daemon), never by the
# function's code, so no path can show them: each with the reason it is needed.
USED_BY_THE_PLATFORM = {
    "logs:CreateLogStream": "Lambda writes the function's logs with its execution role",
    "logs:PutLogEvents": "Lambda writes the function's logs with its execution role",
    "xray:PutTraceSegments": "active tracing: the X-Ray daemon sends segments as the role",
    "xray:PutTelemetryRecords": "active tracing: the X-Ray daemon reports as the role",
    "sqs:SendMessage": "Lambda delivers a failed async event to the on-failure queue as the role",
    # Checked by AWS at StartJobRun (tag-on-create of snapledger:job-id); moto's
    # StartJobRun takes the tags without asking for it.
    "emr-serverless:TagResource": "StartJobRun tags the run it creates (tag-on-create)",
}

# Statements of a platform action that the function's code calls too: checked like any other
# (register's intake sends to the registration queue; its failure queue is Lambda's).
CODE_STATEMENTS = {"QueueRegistrations"}


class UnresolvedReferenceError(LookupError):
    """The template refers to something the emulated account does not model."""


@dataclass
class Resolver:
    """CloudFormation intrinsics → the emulated account's names and ARNs."""

    refs: dict[str, str]
    attributes: dict[tuple[str, str], str]
    template: dict[str, Any]

    def __call__(self, value: Any) -> Any:  # noqa: PLR0911 - one return per intrinsic
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"}:
            return self._ref(value["Ref"])
        if set(value) == {"Fn::GetAtt"}:
            logical_id, attribute = value["Fn::GetAtt"]
            return self._attribute(logical_id, attribute)
        if set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(str(self(p)) for p in parts)
        if set(value) == {"Fn::Sub"}:
            text = value["Fn::Sub"]
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(self._sub(m.group(1))), text)
        if set(value) == {"Fn::Select"}:
            index, items = value["Fn::Select"]
            return self(items)[int(index)]
        if set(value) == {"Fn::Split"}:
            separator, text = value["Fn::Split"]
            return str(self(text)).split(separator)
        return {k: self(v) for k, v in value.items()}

    def _sub(self, name: str) -> str:
        if "." in name:
            logical_id, attribute = name.split(".", 1)
            return self._attribute(logical_id, attribute)
        return self._ref(name)

    def _ref(self, name: str) -> str:
        if name in _PSEUDO:
            return _PSEUDO[name]
        if name in self.refs:
            return self.refs[name]
        parameter = self.template.get("Parameters", {}).get(name)
        if parameter is not None and "Default" in parameter:
            return str(parameter["Default"])
        raise UnresolvedReferenceError(f"Ref {name}")

    def _attribute(self, logical_id: str, attribute: str) -> str:
        if (logical_id, attribute) in self.attributes:
            return self.attributes[(logical_id, attribute)]
        resource_type = self.template["Resources"].get(logical_id, {}).get("Type", "")
        if attribute == "Arn" and resource_type:
            # A resource no path reads (a log group, a queue): an ARN of its own that no
            # request of the code can name.
            service = resource_type.split("::")[1].lower()
            return f"arn:{PARTITION}:{service}:{REGION}:{ACCOUNT}:emulated/{logical_id}"
        raise UnresolvedReferenceError(f"Fn::GetAtt {logical_id}.{attribute}")


@dataclass
class EmulatedDeployment:
    synth: Synthesized
    admin: boto3.Session
    application_id: str
    resolve: Resolver
    registration_queue_url: str
    _credentials: dict[str, dict[str, str]] = field(default_factory=dict)

    # --- admin-side views (setup and inspection) ----------------------------------------

    @property
    def ledger(self) -> DynamoLedger:
        return DynamoLedger(TABLE, client=self.admin.client("dynamodb"))

    @property
    def store(self) -> S3ObjectStore:
        return S3ObjectStore(BUCKET, client=self.admin.client("s3"))

    # --- the functions ------------------------------------------------------------------

    def function_logical_id(self, name: str) -> str:
        return self.synth.logical_id(self.synth.stack.functions.functions[name])

    def role_logical_id(self, name: str) -> str:
        role = self.synth.stack.functions.functions[name].role
        assert role is not None
        return self.synth.logical_id(role)

    def role_statements(self, name: str) -> list[dict[str, Any]]:
        """The function role's statements as synthesized, intrinsics resolved."""
        return [self.resolve(s) for s in role_statements(self.synth, self.role_logical_id(name))]

    def environment(self, name: str) -> dict[str, str]:
        properties = self.synth.template_json["Resources"][self.function_logical_id(name)][
            "Properties"
        ]
        variables = properties.get("Environment", {}).get("Variables", {})
        return {key: str(self.resolve(value)) for key, value in variables.items()}

    def handler_path(self, name: str) -> str:
        properties = self.synth.template_json["Resources"][self.function_logical_id(name)][
            "Properties"
        ]
        return str(properties["Handler"])

    def credentials(self, name: str) -> dict[str, str]:
        """Temporary credentials of the function's role (created on first use)."""
        if name not in self._credentials:
            iam = self.admin.client("iam")
            role_name = f"snapledger-{name}"
            trust = {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:{PARTITION}:iam::{ACCOUNT}:user/{ADMIN}"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
            arn = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(trust))[
                "Role"
            ]["Arn"]
            iam.put_role_policy(
                RoleName=role_name,
                PolicyName="synthesized",
                PolicyDocument=json.dumps(
                    {"Version": "2012-10-17", "Statement": self.role_statements(name)}
                ),
            )
            issued = self.admin.client("sts").assume_role(RoleArn=arn, RoleSessionName=name)
            creds = issued["Credentials"]
            self._credentials[name] = {
                "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
                "AWS_SESSION_TOKEN": creds["SessionToken"],
            }
        return self._credentials[name]

    def job_role_client(self, service: str) -> Any:
        """A client with the Spark job role's credentials and its synthesized statements
        (EMRFS cannot run here: a test makes the calls EMRFS makes)."""
        if "spark-job" not in self._credentials:
            iam = self.admin.client("iam")
            role_id = self.synth.logical_id(self.synth.stack.spark.job_role)
            statements = [self.resolve(s) for s in role_statements(self.synth, role_id)]
            iam.update_assume_role_policy(
                RoleName=JOB_ROLE, PolicyDocument=json.dumps(_trust_the_admin())
            )
            iam.put_role_policy(
                RoleName=JOB_ROLE,
                PolicyName="synthesized",
                PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
            )
            arn = f"arn:{PARTITION}:iam::{ACCOUNT}:role/{JOB_ROLE}"
            creds = self.admin.client("sts").assume_role(RoleArn=arn, RoleSessionName="job")[
                "Credentials"
            ]
            self._credentials["spark-job"] = {
                "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
                "AWS_SESSION_TOKEN": creds["SessionToken"],
            }
        return self._client_with(self._credentials["spark-job"], service)

    def role_client(self, role_name: str, statements: list[Any], service: str) -> Any:
        """A client of a new role holding only ``statements`` (resolved), e.g. a managed
        policy the stack outputs for principals outside it."""
        return self._client_with(self.role_credentials(role_name, statements), service)

    def role_credentials(self, role_name: str, statements: list[Any]) -> dict[str, str]:
        """The credentials (``AWS_*`` variables) of a new role holding only ``statements``."""
        iam = self.admin.client("iam")
        arn = iam.create_role(
            RoleName=role_name, AssumeRolePolicyDocument=json.dumps(_trust_the_admin())
        )["Role"]["Arn"]
        iam.put_role_policy(
            RoleName=role_name,
            PolicyName="synthesized",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )
        creds = self.admin.client("sts").assume_role(RoleArn=arn, RoleSessionName=role_name)
        issued = creds["Credentials"]
        return {
            "AWS_ACCESS_KEY_ID": issued["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": issued["SecretAccessKey"],
            "AWS_SESSION_TOKEN": issued["SessionToken"],
        }

    def withdraw(self, name: str, action: str) -> None:
        """Take ``action`` out of the function's role (a deployment mistake, for tests)."""
        self.credentials(name)  # the role exists
        statements = []
        for statement in self.role_statements(name):
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            kept = [a for a in actions if a != action]
            if kept:
                statements.append({**statement, "Action": kept})
        self.admin.client("iam").put_role_policy(
            RoleName=f"snapledger-{name}",
            PolicyName="synthesized",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )

    def client_as(self, name: str, service: str) -> Any:
        """A boto3 client with the credentials of the function's role."""
        return self._client_with(self.credentials(name), service)

    @staticmethod
    def _client_with(creds: dict[str, str], service: str) -> Any:
        return boto3.client(
            service,  # type: ignore[call-overload]
            region_name=REGION,
            aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=creds["AWS_SESSION_TOKEN"],
        )

    def invoke(
        self,
        name: str,
        event: dict[str, Any],
        *,
        clock: Clock | None = None,
        remaining_ms: int = 900_000,
        settings: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Call the function's handler as Lambda would, under its role (``settings``: more
        ``SNAPLEDGER_*`` variables than the template sets, e.g. a lower threshold)."""
        module_name, attribute = self.handler_path(name).rsplit(".", 1)
        context = _Context(function_name=name, remaining_ms=remaining_ms)
        variables = {**POWERTOOLS_ENV, **self.environment(name), **(settings or {})}
        with _environment({**variables, **self.credentials(name)}):
            # Imported with the function's environment: Powertools reads it at import.
            handler = getattr(importlib.import_module(module_name), attribute)
            reset_runtime()
            built = runtime()  # the clients, from the environment, as on a cold start
            if clock is not None:
                built = replaced(built, clock=clock)
            with runtime_override(built):
                answer: dict[str, Any] = handler(event, context)
        return answer

    def deliver_gc_shards(self, *, clock: Clock | None = None) -> list[dict[str, Any]]:
        """gc's SQS trigger on the GC shard queue, with gc's role: one shard (batch size
        1) per invocation. Returns gc's answers."""
        return self._poll("gc", self.environment("gc")[ENV_GC_QUEUE_URL], 1, clock=clock)

    def poll_registrations(self) -> list[dict[str, Any]]:
        """Lambda's SQS poller on the registration queue, with register's role (batches of
        up to 10, one message group's at a time in flight, as FIFO gives them)."""
        return self._poll("register", self.registration_queue_url, 10)

    def _poll(
        self, name: str, url: str, batch_size: int, *, clock: Clock | None = None
    ) -> list[dict[str, Any]]:
        """What an event source mapping does with the function's role: read the queue's
        attributes, receive batches, invoke the function with each as the SQS event, and
        delete the messages not returned in ``batchItemFailures`` (those stay invisible
        until their visibility timeout). Returns the function's answers."""
        sqs = self.client_as(name, "sqs")
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        arn = attributes["Attributes"]["QueueArn"]
        answers = []
        while True:
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=batch_size, AttributeNames=["All"]
            ).get("Messages", [])
            if not messages:
                return answers
            answer = self.invoke(name, sqs_event(messages, arn, REGION), clock=clock)
            answers.append(answer)
            retried = {failure["itemIdentifier"] for failure in answer["batchItemFailures"]}
            for message in messages:
                if message["MessageId"] not in retried:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


@dataclass(frozen=True)
class _Context(FakeLambdaContext):
    remaining_ms: int = 900_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in (*values, *_CREDENTIAL_VARIABLES)}
    for key in _CREDENTIAL_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(values)
    # boto3's default session keeps the first credentials it resolved: a cold start has none.
    boto3.DEFAULT_SESSION = None
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        boto3.DEFAULT_SESSION = None
        reset_runtime()


def _trust_the_admin() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{PARTITION}:iam::{ACCOUNT}:user/{ADMIN}"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_statements(synth: Synthesized, role_logical_id: str) -> list[dict[str, Any]]:
    """Every statement of the policies attached to a role in the template (unresolved)."""
    resources = synth.template_json["Resources"]
    ref = {"Ref": role_logical_id}
    statements: list[dict[str, Any]] = []
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and ref in resource["Properties"]["Roles"]:
            statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    role = resources[role_logical_id]["Properties"]
    for inline in role.get("Policies", []):
        statements.extend(inline["PolicyDocument"]["Statement"])
    if role.get("ManagedPolicyArns"):
        raise UnresolvedReferenceError(f"{role_logical_id} has managed policies: model them")
    return statements


def stand_up(synth: Synthesized) -> EmulatedDeployment:
    """Create the admin user and the resources; call inside ``mock_aws`` + ``enforced_iam``.

    The bucket has Object Lock when the template's has (``protectLatest``)."""
    bootstrap_iam = boto3.client("iam", region_name=REGION)
    bootstrap_iam.create_user(UserName=ADMIN)
    bootstrap_iam.put_user_policy(
        UserName=ADMIN,
        PolicyName="everything",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }
        ),
    )
    key = bootstrap_iam.create_access_key(UserName=ADMIN)["AccessKey"]
    admin = boto3.Session(
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
        region_name=REGION,
    )
    bucket_id = synth.logical_id(synth.stack.storage.bucket)
    object_lock = synth.template_json["Resources"][bucket_id]["Properties"].get(
        "ObjectLockEnabled", False
    )
    admin.client("s3").create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=object_lock)
    dynamodb = admin.client("dynamodb")
    dynamodb.create_table(**create_table_request(TABLE))
    stream_arn = dynamodb.describe_table(TableName=TABLE)["Table"].get(
        "LatestStreamArn", f"{table_arn(TABLE)}/stream/emulated"
    )
    sqs = admin.client("sqs")
    queue_url = sqs.create_queue(
        QueueName=REGISTRATION_QUEUE,
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"},
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    application = admin.client("emr-serverless").create_application(
        name="snapledger-spark", releaseLabel="emr-7.0.0", type="SPARK"
    )
    job_role = admin.client("iam").create_role(
        RoleName="snapledger-spark-job",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]

    stack = synth.stack
    ids = {
        "bucket": synth.logical_id(stack.storage.bucket),
        "table": synth.logical_id(stack.ledger.table),
        "application": synth.logical_id(stack.spark.application),
        "job_role": synth.logical_id(stack.spark.job_role),
        "bus": synth.logical_id(stack.events.bus),
        "queue": synth.logical_id(stack.functions.registration_queue),
    }
    refs = {
        ids["bucket"]: BUCKET,
        ids["table"]: TABLE,
        ids["job_role"]: "snapledger-spark-job",
        ids["bus"]: "snapledger-events",
        ids["queue"]: queue_url,
    }
    attributes = {
        (ids["bucket"], "Arn"): f"arn:{PARTITION}:s3:::{BUCKET}",
        (ids["table"], "Arn"): table_arn(TABLE),
        (ids["table"], "StreamArn"): stream_arn,
        (ids["application"], "Arn"): application["arn"],
        (ids["application"], "ApplicationId"): application["applicationId"],
        (ids["job_role"], "Arn"): job_role,
        (ids["queue"], "Arn"): queue_arn,
        (ids["queue"], "QueueUrl"): queue_url,
    }
    shards = admin.client("sqs").create_queue(QueueName="snapledger-gc-shards")["QueueUrl"]
    shards_id = synth.logical_id(stack.gc_shards.queue)
    refs[shards_id] = shards
    attributes[(shards_id, "Arn")] = f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:snapledger-gc-shards"
    for name in FUNCTION_NAMES:
        function_id = synth.logical_id(stack.functions.functions[name])
        refs[function_id] = f"snapledger-{name}"
    return EmulatedDeployment(
        synth=synth,
        admin=admin,
        application_id=application["applicationId"],
        resolve=Resolver(refs=refs, attributes=attributes, template=synth.template_json),
        registration_queue_url=queue_url,
    )
