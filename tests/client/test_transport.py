"""The AWS transport's region: --region, else AWS_REGION, else AWS_DEFAULT_REGION, else the AWS
profile's (boto3 alone reads AWS_DEFAULT_REGION only); none at all is explained in one line."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from snapledger.client.transport import AwsTransport, TransportError
from tests.cli.support import run_cli

TEMPLATE = json.dumps(
    {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"FunctionQuery": {"Value": "snapledger-query-fn"}},
    }
)


@pytest.fixture
def no_region(monkeypatch, tmp_path):
    """No region anywhere: neither variable, and AWS config files that do not exist."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return monkeypatch


def _stack_in(region: str) -> None:
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName="Snapledger", TemplateBody=TEMPLATE
    )


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION"])
def test_the_stack_is_found_in_the_region_an_environment_variable_names(no_region, variable):
    no_region.setenv(variable, "eu-west-1")
    with mock_aws():
        _stack_in("eu-west-1")
        assert AwsTransport().functions() == {"query": "snapledger-query-fn"}


def test_aws_region_comes_before_aws_default_region_and_region_before_both(no_region):
    no_region.setenv("AWS_REGION", "eu-west-1")
    no_region.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert AwsTransport().resolved_region() == "eu-west-1"
    assert AwsTransport(region="ap-south-1").resolved_region() == "ap-south-1"


def test_the_profiles_region_is_used_when_no_variable_is_set(no_region, tmp_path):
    (tmp_path / "config").write_text("[default]\nregion = sa-east-1\n")
    assert AwsTransport().resolved_region() == "sa-east-1"


def test_no_region_is_explained_in_one_line_naming_the_variables_and_the_option(no_region):
    with pytest.raises(TransportError) as raised:
        AwsTransport().functions()
    message = str(raised.value)
    assert "\n" not in message
    assert all(word in message for word in ("--region", "AWS_REGION", "AWS_DEFAULT_REGION"))


def test_the_cli_without_a_region_says_so_in_one_line(no_region):
    ran = run_cli("latest", "orders", "3")
    assert ran.status != 0
    said = [line for line in (ran.out + "\n" + ran.err).splitlines() if line.strip()]
    assert len(said) == 1, said
    assert "no AWS region" in said[0] and "--region" in said[0] and "AWS_REGION" in said[0]
    assert "You must specify a region" not in said[0]
