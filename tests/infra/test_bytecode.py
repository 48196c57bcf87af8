"""The functions' code ships compiled for the Lambda runtime's Python (infra/bytecode.py):
what a cold start then loads is bytecode, and the asset stays byte-for-byte stable."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra import bytecode, names
from infra.bytecode import LAMBDA_PYTHON, TASK_ROOT, compile_for_lambda, lambda_interpreter
from infra.constructs.function_specs import RUNTIME
from infra.packaging import stage_function_code

REPO = Path(__file__).resolve().parents[2]
INTERPRETER = lambda_interpreter()
needs_runtime_python = pytest.mark.skipif(
    INTERPRETER is None and not os.environ.get("CI"),
    reason=f"no Python {LAMBDA_PYTHON} on this machine (CI has one: there it must run)",
)


def staged(compiled: bool = True) -> Path:
    return stage_function_code(
        REPO / "functions",
        REPO / "shared" / "snapledger",
        names.LAMBDA_EXCLUDED_SUBPACKAGES,
        compiled=compiled,
    )


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_the_bytecode_is_for_the_runtime_the_functions_run_on() -> None:
    assert RUNTIME.name == f"python{LAMBDA_PYTHON}"


@needs_runtime_python
def test_every_module_ships_with_its_bytecode_and_two_stagings_are_identical() -> None:
    first, second = staged(), staged()
    tag = "cpython-" + LAMBDA_PYTHON.replace(".", "")
    sources = sorted(first.rglob("*.py"))
    assert sources
    for source in sources:
        assert (source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc").is_file(), source
    assert tree_digest(first) == tree_digest(second)  # CDK's asset hash does not move


@needs_runtime_python
def test_the_runtime_python_loads_the_bytecode_without_compiling_it(
    tmp_path: Path,
) -> None:
    code = staged()
    probe = (
        "import importlib._bootstrap_external as be, json, sys\n"
        "compiled = []\n"
        "original = be.SourceLoader.source_to_code\n"
        "def spy(self, data, path, **kw):\n"
        "    compiled.append(path)\n"
        "    return original(self, data, path, **kw)\n"
        "be.SourceLoader.source_to_code = spy\n"
        "import snapledger.job_kinds\n"
        "print(json.dumps(compiled))\n"
    )
    done = subprocess.run(
        [INTERPRETER, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    compiled = json.loads(done.stdout)
    assert compiled == []  # snapledger/__init__, job_kinds and layout: each from its .pyc


@needs_runtime_python
def test_the_bytecode_names_lambdas_paths_not_the_staging_directorys() -> None:
    code = staged()
    pyc = next((code / "snapledger" / "__pycache__").glob("job_kinds.*.pyc")).read_bytes()
    assert f"{TASK_ROOT}/snapledger/job_kinds.py".encode() in pyc
    assert str(code).encode() not in pyc


def test_without_the_runtime_python_the_code_ships_as_sources_and_says_so(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "module.py").write_text("VALUE = 1\n")
    bytecode._say_once.cache_clear()
    assert compile_for_lambda(tmp_path, None) is False
    assert not list(tmp_path.rglob("*.pyc"))
    assert f"no Python {LAMBDA_PYTHON} found" in capsys.readouterr().err


def test_the_interpreter_named_by_the_variable_is_used_only_when_it_is_the_runtimes(
    monkeypatch,
) -> None:
    find = bytecode.lambda_interpreter.__wrapped__
    this_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setenv(bytecode.INTERPRETER_VARIABLE, sys.executable)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("PYENV_ROOT", "/nonexistent")
    assert find(this_python) == sys.executable
    assert find("3.99") is None
