"""Synthesize the real app once, offline, and share it with every test module here.

Each module asks for the ``synth`` fixture (module scope); the synthesis behind it is cached
for the session, so the suite pays for one synth (~15 s) however many modules use it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
# jsii silences its end-of-life banner only for the Node major version it is given.
os.environ.setdefault(
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION",
    subprocess.run(
        ["node", "-p", "process.versions.node.split('.')[0]"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip(),
)

from aws_cdk import App
from aws_cdk.assertions import Template

from infra import names
from infra.app import build_app
from infra.stack import SnapledgerStack, SourcePaths


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: SnapledgerStack
    template: Template
    template_json: dict[str, Any]
    outdir: Path

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """Logical id -> resource, for one CloudFormation type."""
        return {
            logical_id: resource
            for logical_id, resource in self.template_json["Resources"].items()
            if resource["Type"] == resource_type
        }

    def logical_id(self, construct: Any) -> str:
        """The template logical id of an L2 construct (or of an L1 resource)."""
        resource = getattr(construct.node, "default_child", None) or construct
        return self.stack.get_logical_id(resource)


def _job_sources(tmp: Path) -> SourcePaths | None:
    """The repository's sources; a stub entry point only while jobs/entrypoint.py is missing."""
    if (names.JOBS_DIR / names.JOB_ENTRYPOINT_NAME).is_file():
        return None
    warnings.warn(
        "jobs/entrypoint.py does not exist yet: synthesizing with a stub entry point",
        stacklevel=2,
    )
    jobs = tmp / "jobs"
    shutil.copytree(names.JOBS_DIR, jobs, ignore=shutil.ignore_patterns("__pycache__"))
    (jobs / names.JOB_ENTRYPOINT_NAME).write_text("# stub for infra tests\n", encoding="utf-8")
    return SourcePaths(jobs_dir=jobs)


@cache
def synthesize_app(context: tuple[tuple[str, str], ...] = ()) -> Synthesized:
    """The app as ``cdk synth`` builds it, with ``context`` (``-c key=value`` pairs)."""
    tmp = Path(tempfile.mkdtemp(prefix="snapledger-infra-tests-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    outdir = tmp / "cdk.out"
    app, stack = build_app(context=dict(context), outdir=str(outdir), sources=_job_sources(tmp))
    assembly = app.synth()
    template_json = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesized(
        app=app,
        stack=stack,
        template=Template.from_json(template_json),
        template_json=json.loads(json.dumps(template_json)),
        outdir=outdir,
    )


@pytest.fixture(scope="module")
def synth() -> Synthesized:
    return synthesize_app()
