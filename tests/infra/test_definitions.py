"""One source of truth: the template agrees with the code and the pins it was built from."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from infra import names
from infra.constants import EMR_RELEASE_LABEL, EMR_SPARK_VERSION, FUNCTION_NAMES, JOB_PYTHON
from jobs.entrypoint import REQUIRED_PYTHON
from snapledger.adapters.table_definition import TTL_ATTRIBUTE, create_table_request
from tests.infra.conftest import Synthesized

# What each release ships, from AWS's release notes: Spark (major.minor) and the Pythons.
# emr-spark-8.0.0: https://docs.amazonaws.cn/en_us/emr/latest/ReleaseGuide/emr-spark800-release.html
EMR_RELEASES = {
    "emr-spark-8.0.0": ("4.0", ("3.11", "3.12", "3.13")),
}


def _table(synth: Synthesized) -> dict[str, Any]:
    (table,) = synth.resources("AWS::DynamoDB::Table").values()
    return dict(table["Properties"])


def _by_name(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: item[key])


def test_table_agrees_with_create_table_request(synth: Synthesized) -> None:
    # Given what the local runtime creates and what the stack deploys
    expected = create_table_request("any")
    deployed = _table(synth)

    # Then keys, attributes, indexes, billing and stream are the same
    assert _by_name(deployed["AttributeDefinitions"], "AttributeName") == _by_name(
        expected["AttributeDefinitions"], "AttributeName"
    )
    assert deployed["KeySchema"] == expected["KeySchema"]
    assert deployed["BillingMode"] == expected["BillingMode"]
    assert _by_name(deployed["GlobalSecondaryIndexes"], "IndexName") == _by_name(
        expected["GlobalSecondaryIndexes"], "IndexName"
    )
    assert deployed["StreamSpecification"] == {
        "StreamViewType": expected["StreamSpecification"]["StreamViewType"]
    }
    assert deployed["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}


def test_release_label_is_emr_spark_8(synth: Synthesized) -> None:
    (application,) = synth.resources("AWS::EMRServerless::Application").values()
    assert EMR_RELEASE_LABEL == "emr-spark-8.0.0"
    assert application["Properties"]["ReleaseLabel"] == EMR_RELEASE_LABEL


def test_release_label_pyspark_pin_and_job_python_agree() -> None:
    # Given what the release ships (AWS's release notes, EMR_RELEASES above)
    assert EMR_RELEASE_LABEL in EMR_RELEASES, "record the release's facts before deploying it"
    spark, pythons = EMR_RELEASES[EMR_RELEASE_LABEL]
    # Then the jobs are built for its Spark: the pin in pyproject, the lock, what is installed
    assert spark == EMR_SPARK_VERSION
    project = tomllib.loads((names.REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lock = tomllib.loads((names.REPO_ROOT / "uv.lock").read_text(encoding="utf-8"))
    (locked,) = [p["version"] for p in lock["package"] if p["name"] == "pyspark"]
    assert project["dependency-groups"]["jobs"] == [f"pyspark=={locked}"]
    assert importlib.metadata.version("pyspark") == locked
    assert ".".join(locked.split(".")[:2]) == spark
    # And they run on a Python the release ships, that pyspark, the project and the job's
    # own entry-point check accept, at the path its version names
    minor = Path(JOB_PYTHON).name.removeprefix("python")
    assert f"/usr/bin/python{minor}" == JOB_PYTHON
    assert minor in pythons
    assert Version(minor) in SpecifierSet(importlib.metadata.metadata("pyspark")["Requires-Python"])
    assert Version(minor) in SpecifierSet(project["project"]["requires-python"])
    assert tuple(int(part) for part in minor.split(".")) >= REQUIRED_PYTHON


def test_powertools_layer_version_matches_the_pinned_package(synth: Synthesized) -> None:
    # The Lambda layer and the package the tests run against must be the same release:
    # the lock, what is installed, and the versioned SSM parameter the template resolves.
    lock = tomllib.loads((names.REPO_ROOT / "uv.lock").read_text(encoding="utf-8"))
    (locked,) = [p["version"] for p in lock["package"] if p["name"] == "aws-lambda-powertools"]
    assert locked == names.POWERTOOLS_VERSION
    assert importlib.metadata.version("aws-lambda-powertools") == names.POWERTOOLS_VERSION
    assert (
        f"/aws/service/powertools/python/arm64/python3.12/{names.POWERTOOLS_VERSION}"
    ) == names.POWERTOOLS_LAYER_SSM_PARAMETER
    defaults = [p.get("Default") for p in synth.template_json.get("Parameters", {}).values()]
    assert names.POWERTOOLS_LAYER_SSM_PARAMETER in defaults


def test_powertools_layer_brings_pydantic() -> None:
    # AWS builds the official layer from ``aws-lambda-powertools[all]``: the functions' own
    # third-party imports must be inside that extra, since the code asset ships none.
    requirements = importlib.metadata.requires("aws-lambda-powertools") or []
    in_all = {
        re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()
        for requirement in requirements
        if "extra == 'all'" in requirement or 'extra == "all"' in requirement
    }
    assert "pydantic" in in_all


def test_handlers_that_exist_define_handler() -> None:
    for name in FUNCTION_NAMES:
        path = names.FUNCTIONS_DIR / f"{name}.py"
        if not path.exists():
            continue  # written in parallel; synth does not need it
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        } | {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        assert "handler" in defined, f"{path} must define handler"


def test_job_entrypoint_exists() -> None:
    if not (names.JOBS_DIR / names.JOB_ENTRYPOINT_NAME).is_file():
        pytest.skip("jobs/entrypoint.py is not written yet; the app needs it to synthesize")
