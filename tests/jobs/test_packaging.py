"""What lets the job ship to EMR Serverless: its imports and its Spark version."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pyspark

from infra.constants import EMR_RELEASE_LABEL, EMR_SPARK_VERSION

JOBS = Path(__file__).resolve().parents[2] / "jobs"

# EMR Serverless release label -> Spark major.minor (AWS release notes, 2026).
EMR_RELEASE_SPARK = {
    "emr-7.9.0": "3.5",
    "emr-7.10.0": "3.5",
    "emr-spark-8.0.0": "4.0",
}


def test_the_local_pyspark_pin_matches_the_release_the_app_deploys() -> None:
    assert EMR_RELEASE_LABEL == "emr-spark-8.0.0"
    assert EMR_RELEASE_SPARK[EMR_RELEASE_LABEL] == EMR_SPARK_VERSION
    major_minor = ".".join(pyspark.__version__.split(".")[:2])
    assert major_minor == EMR_SPARK_VERSION


def test_the_jobs_package_imports_only_pyspark_and_the_standard_library() -> None:
    # A --py-files zip carries pure Python only; anything else must already be on EMR.
    allowed = set(sys.stdlib_module_names) | {"pyspark", "py4j", "jobs", "__future__"}
    offenders = []
    for path in sorted(JOBS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in allowed]
    assert offenders == []
