"""The functions' code shipped compiled, for the Lambda runtime's Python.

Lambda's ``/var/task`` is read-only: Python cannot write the bytecode it compiles there, so
a package shipped as sources compiles every module it imports on every cold start (on this
machine about 130 ms of the gc function's 300 ms of snapledger imports; README, "Cold
start"). ``compile_for_lambda`` writes each module's ``__pycache__/*.cpython-3XX.pyc`` with
the interpreter of the runtime's version, in ``unchecked-hash`` mode (no timestamps: the
same sources give the same bytes, so CDK's asset hash stays stable across synths) and with
the paths a traceback shows as Lambda's (``/var/task/...``, not the staging directory's).

The interpreter: ``SNAPLEDGER_LAMBDA_PYTHON`` (a path), else ``python3.12`` on PATH, else a
pyenv installation of that version. With none, the code ships as sources (it runs the same,
and its cold starts compile it) and synth says so once on stderr.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: The Lambda runtime's Python (``infra/constructs/function_specs.py``'s ``RUNTIME``; a test
#: keeps the two equal).
LAMBDA_PYTHON = "3.12"
#: Where Lambda unpacks the function's code.
TASK_ROOT = "/var/task"
INTERPRETER_VARIABLE = "SNAPLEDGER_LAMBDA_PYTHON"


@functools.cache
def lambda_interpreter(version: str = LAMBDA_PYTHON) -> str | None:
    """A Python of ``version`` that runs, or None (looked for once per process)."""
    given = os.environ.get(INTERPRETER_VARIABLE)
    candidates: list[str | None] = [given] if given else []
    candidates.append(shutil.which(f"python{version}"))
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [str(p) for p in sorted(pyenv_root.glob(f"versions/{version}.*/bin/python3"))]
    for candidate in candidates:
        if candidate and _is_version(candidate, version):
            return candidate
    return None


def _is_version(interpreter: str, version: str) -> bool:
    try:
        done = subprocess.run(
            [interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def compile_for_lambda(code_dir: Path, interpreter: str | None) -> bool:
    """Compile every module under ``code_dir`` with ``interpreter`` (see the module's
    docstring); False, with a note on stderr, when there is no interpreter."""
    if interpreter is None:
        _say_once(
            f"snapledger: no Python {LAMBDA_PYTHON} found (set {INTERPRETER_VARIABLE}): the "
            "functions' code ships as sources, so each cold start compiles it"
        )
        return False
    subprocess.run(
        [
            interpreter,
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(code_dir),
            "-p",
            TASK_ROOT,
            str(code_dir),
        ],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    return True


@functools.cache
def _say_once(note: str) -> None:
    print(note, file=sys.stderr)
