"""Handler import overhead: what snapledger's own code adds to a function's cold start.

For each handler module ``functions/*.py`` (found on disk, so new handlers are included),
``RUNS`` times, alternating:

- a fresh interpreter imports ``functions.<name>``: ``handler_import_ms.<name>`` is the
  median;
- a fresh interpreter imports just the libraries that import loads — every module of
  snapledger's runtime dependencies (boto3, pydantic, aws-lambda-powertools[tracer] and
  what they depend on, read from the installed metadata), in the order the handler
  finished loading them: ``library_import_ms.<name>`` is the median. The same process
  then imports the rest of snapledger the handler loads (``snapledger_ms``: models,
  core, services, adapters) and finally the handler (``function_layer_ms``:
  ``functions.*``, ``snapledger.entrypoints.*``, ``snapledger.runtime`` and the
  Powertools objects they create), timing each first-party module on its own.

``first_use_ms.<name>`` is what the handler process then spends in its first
``runtime()`` and in building each collaborator the function's entrypoints ask it for
(``rt.ledger``, ``rt.store``, ...: found in the source of the function-layer modules the
handler loads): the settings, the adapters' import, the boto3 clients. A cold start's
first invocations pay it after the import (each collaborator when first asked for; no
request is sent here). ``collaborators.<name>`` lists them.

``handler_import_overhead.<name>`` = handler ÷ libraries (target ≤ 1.15).
``handler_import_overhead_paired.<name>`` is the median of the same ratio taken within
each decomposition process (all three parts measured in one interpreter): steadier on a
busy machine. ``slowest_modules.<name>`` names the five costliest first-party modules.

``handler_import_overhead_instructions.<name>`` is the same ratio in instructions, counted
by valgrind's cachegrind (when ``valgrind`` is installed): the handler's import on top of
its libraries ÷ the libraries' import, the interpreter's start taken off both. It does
not move with the machine's load, so it tells a change's effect from noise; it is not
time (a module can cost more instructions than another and less time).

Times are CPU time (``time.process_time``), not wall time: imports are CPU-bound once
the files are cached, and CPU time does not count the waits of a busy shared machine.

The children run the Lambda runtime's Python (``infra/bytecode.py``'s ``LAMBDA_PYTHON``,
found as synth finds it) in a virtual environment of their own (``.bench/work/handlers/
python3.X``) holding snapledger's runtime dependencies at their locked versions
(``uv export``), with snapledger from the sources: the interpreter the functions run, whose
garbage collector and class creation cost differently from the project's. With no such
Python they run this one, and ``handler_python`` says so.

Every module, libraries' and snapledger's, is loaded from bytecode (compiled once, before
the timed runs, into the run's own cache): the shape that ships, since the functions'
code is deployed compiled for the Lambda runtime (infra/bytecode.py). Before that change
snapledger was timed compiling its sources on every import, as a package shipped as
sources does on every cold start (``/var/task`` is read-only).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from infra.bytecode import LAMBDA_PYTHON, lambda_interpreter

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
RUNS = 9
TARGET = 1.15
FIRST_PARTY = ("snapledger", "functions")
FUNCTION_LAYER = ("functions", "snapledger.entrypoints", "snapledger.runtime")
ENV = {
    "POWERTOOLS_SERVICE_NAME": "snapledger",
    "POWERTOOLS_METRICS_NAMESPACE": "Snapledger",
    # For ``first_use_ms``: what a deployed function is given. Building its collaborators
    # builds clients and calls nothing: the credentials are placeholders, never used.
    "SNAPLEDGER_TABLE": "snapledger-bench",
    "SNAPLEDGER_ROOT": "s3://snapledger-bench",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_EC2_METADATA_DISABLED": "true",
    # As deployed (infra/constructs/functions.py): a function that starts or reads jobs
    # has the EMR Serverless application, GC and register their queues.
    "SNAPLEDGER_EMR_APPLICATION_ID": "00bench",
    "SNAPLEDGER_EMR_JOB_ROLE_ARN": "arn:aws:iam::123456789012:role/snapledger-bench-job",
    "SNAPLEDGER_JOB_ENTRYPOINT": "s3://snapledger-bench-code/jobs/entrypoint.py",
    "SNAPLEDGER_GC_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/gc",
    "SNAPLEDGER_REGISTRATION_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/reg",
}
#: Where the children keep the bytecode they compile (``run`` sets it under its workdir).
_BYTECODE = Path(".bench") / "handlers" / "bytecode"
#: The children's Python (``run`` sets it: the Lambda runtime's, when there is one).
_PYTHON = sys.executable
UV = REPO_ROOT / "tools" / "project-uv"
# Both timed scripts import the same helpers before the clock starts.
_PRELUDE = "import importlib, json, sys, time\n"
_TIME_HANDLER = _PRELUDE + (
    "t = time.process_time()\nimport functions.{name}\nimported = time.process_time() - t\n"
    # What the first invocations add before their own work: the settings, the adapters
    # and their boto3 clients, each built when the function first asks for it.
    "from snapledger.runtime import runtime\n"
    "t = time.process_time()\nrt = runtime()\n"
    "for collaborator in {collaborators!r}:\n    getattr(rt, collaborator)\n"
    "print(json.dumps([imported, time.process_time() - t]))\n"
)
_DECOMPOSE = _PRELUDE + (
    "plan = json.load(open(sys.argv[1]))\n"
    "def load(name):\n"
    "    t = time.process_time()\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except Exception:\n"
    "        pass\n"
    "    return time.process_time() - t\n"
    "libraries = sum(load(m) for m in plan['libraries'])\n"
    # First-party modules in the order the handler finished them: the function layer's
    # (``functions._startup`` freezes the libraries before snapledger loads) where they were.
    "own, layer = {}, 0.0\n"
    "for m in plan['first_party']:\n"
    "    if m in plan['layer']:\n"
    "        layer += load(m)\n"
    "    else:\n"
    "        own[m] = load(m)\n"
    "print(json.dumps({'libraries': libraries, 'own': own, 'layer': layer}))\n"
)


def run(config: Any) -> dict[str, object]:
    global _BYTECODE, _PYTHON  # noqa: PLW0603 - one folder, one interpreter, every child
    workdir = Path(config.workdir) / "handlers"
    workdir.mkdir(parents=True, exist_ok=True)
    _BYTECODE = workdir / "bytecode"
    _PYTHON, described = lambda_python(workdir)
    roots = library_import_names()
    figures: dict[str, object] = {"handler_python": described}
    ratios: dict[str, float] = {}
    for name in handler_modules():
        plan = import_plan(name, roots)  # which also compiles what it imports, once
        plan_file = workdir / f"{name}-plan.json"
        plan_file.write_text(json.dumps(plan))
        handler_s: list[float] = []
        runtime_s: list[float] = []
        parts: list[dict[str, Any]] = []
        used = collaborators(plan)
        timed = _TIME_HANDLER.format(name=name, collaborators=used)
        for _ in range(RUNS):
            imported, first_use = json.loads(_python(timed))
            handler_s.append(imported)
            runtime_s.append(first_use)
            parts.append(json.loads(_python(_DECOMPOSE, str(plan_file))))
        library_s = [p["libraries"] for p in parts]
        snapledger_s = [sum(p["own"].values()) for p in parts]
        paired = [
            (p["libraries"] + sum(p["own"].values()) + p["layer"]) / p["libraries"] for p in parts
        ]
        ratios[name] = statistics.median(handler_s) / statistics.median(library_s)
        per_module = {m: statistics.median(p["own"][m] for p in parts) for m in plan["snapledger"]}
        slowest = sorted(per_module.items(), key=lambda kv: kv[1], reverse=True)[:5]
        figures[f"handler_import_overhead.{name}"] = ratios[name]
        figures[f"handler_import_overhead_paired.{name}"] = statistics.median(paired)
        figures[f"handler_import_ms.{name}"] = statistics.median(handler_s) * 1000
        figures[f"first_use_ms.{name}"] = statistics.median(runtime_s) * 1000
        figures[f"collaborators.{name}"] = ", ".join(used)
        figures[f"library_import_ms.{name}"] = statistics.median(library_s) * 1000
        figures[f"snapledger_ms.{name}"] = statistics.median(snapledger_s) * 1000
        figures[f"function_layer_ms.{name}"] = statistics.median(p["layer"] for p in parts) * 1000
        figures[f"slowest_modules.{name}"] = ", ".join(f"{m} {s * 1000:.0f}" for m, s in slowest)
        counted = instruction_overhead(plan_file)
        if counted is not None:
            figures[f"handler_import_overhead_instructions.{name}"] = counted
    figures["handler_import_overhead_max"] = max(ratios.values())
    figures["handler_import_overhead_target"] = TARGET
    return figures


#: Imports a plan's libraries, then (given a second argument) its handler.
_LOAD_PLAN = (
    "import importlib, json, sys\n"
    "plan = json.load(open(sys.argv[1]))\n"
    "for module in plan['libraries'] if len(sys.argv) > 2 else []:\n"
    "    try:\n"
    "        importlib.import_module(module)\n"
    "    except Exception:\n"
    "        pass\n"
    "if sys.argv[2:] == ['handler']:\n"
    "    importlib.import_module(plan['handler'])\n"
)


def instruction_overhead(plan_file: Path) -> float | None:
    """(libraries + handler) ÷ libraries in instructions, each less the interpreter's
    start; None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    start = instructions(_LOAD_PLAN, str(plan_file))
    libraries = instructions(_LOAD_PLAN, str(plan_file), "libraries") - start
    handler = instructions(_LOAD_PLAN, str(plan_file), "handler") - start
    return handler / libraries


def instructions(script: str, *args: str) -> int:
    """Instructions a fresh interpreter runs for ``script`` (cachegrind's ``I refs``)."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            _PYTHON,
            "-c",
            script,
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**_env(), "PYTHONHASHSEED": "0"},
        cwd=REPO_ROOT,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"cachegrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def lambda_python(workdir: Path) -> tuple[str, str]:
    """The children's interpreter and what to call it: the Lambda runtime's Python in a
    virtual environment with the runtime dependencies at their locked versions (made once,
    made again when the lock changes), else this process's."""
    interpreter = lambda_interpreter()
    here = "{}.{}".format(*sys.version_info[:2])
    if interpreter is None:
        return sys.executable, f"{here} (no Python {LAMBDA_PYTHON} found: not the runtime's)"
    requirements = subprocess.run(
        [UV, "export", "--frozen", "--no-default-groups", "--no-emit-project", "--no-hashes"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout
    venv = (workdir / f"python{LAMBDA_PYTHON}").resolve()
    python = venv / "bin" / "python"
    made = venv / "requirements.txt"
    if not made.is_file() or made.read_text() != requirements:
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([UV, "venv", "-q", "--python", interpreter, venv], check=True)
        (workdir / "requirements.txt").write_text(requirements)
        subprocess.run(
            [UV, "pip", "install", "-q", "--python", python, "-r", workdir / "requirements.txt"],
            check=True,
        )
        made.write_text(requirements)
    return str(python), f"{LAMBDA_PYTHON} (the Lambda runtime's)"


def handler_modules() -> list[str]:
    """Every handler module: ``functions/*.py`` but the private ones (``__init__``,
    ``_startup``)."""
    return sorted(p.stem for p in FUNCTIONS_DIR.glob("*.py") if not p.stem.startswith("_"))


def import_plan(name: str, library_roots: set[str]) -> dict[str, Any]:
    """The modules ``import functions.<name>`` loads, in the order their imports finished.

    ``-X importtime`` reports each module when its import completes, so importing them in
    that order loads each one's dependencies before it: each is then timed on its own.
    It reports only imports made by an ``import`` statement: a module loaded through
    ``importlib.import_module`` (pydantic loads ``pydantic.main``, ``pydantic.fields`` and
    ``pydantic.types`` that way, behind ``from pydantic import BaseModel``) is missing from
    it, and was timed as part of the snapledger module that first touched it. Those are
    taken from ``sys.modules`` after the import and appended to their side of the plan.
    """
    done = subprocess.run(
        [
            _PYTHON,
            "-X",
            "importtime",
            "-c",
            f"import json, sys\nimport functions.{name}\nprint(json.dumps(list(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
        cwd=REPO_ROOT,
    )
    finished = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    ][1:]  # the first line is the column header
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    finished = list(dict.fromkeys([*finished, *loaded]))  # botocore reports a few twice
    top = [m.split(".")[0] for m in finished]
    return {
        "libraries": [m for m, t in zip(finished, top, strict=True) if t in library_roots],
        "snapledger": [
            m
            for m, t in zip(finished, top, strict=True)
            if t in FIRST_PARTY and not m.startswith(FUNCTION_LAYER)
        ],
        "handler": f"functions.{name}",
        "layer": [m for m, t in zip(finished, top, strict=True) if m.startswith(FUNCTION_LAYER)],
        "first_party": [m for m, t in zip(finished, top, strict=True) if t in FIRST_PARTY],
    }


def collaborators(plan: dict[str, Any]) -> list[str]:
    """The runtime's collaborators the function asks for: each ``rt.<field>`` named in the
    source of the function-layer modules its handler loads (entrypoints take ``rt``)."""
    fields = _runtime_fields()
    named: set[str] = set()
    for module in plan["layer"]:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            source = Path(spec.origin).read_text(encoding="utf-8")
            named |= set(re.findall(r"\brt\.([a-z_]+)", source))
    return sorted(named & fields)


def _runtime_fields() -> set[str]:
    from snapledger.runtime import Runtime

    return {f.name for f in dataclasses.fields(Runtime)}


def library_import_names() -> set[str]:
    """Top-level import names of snapledger's runtime dependencies, transitively."""
    seen: set[tuple[str, frozenset[str]]] = set()
    pending: list[tuple[str, frozenset[str]]] = [("snapledger", frozenset())]
    distributions: set[str] = set()
    while pending:
        dist, extras = pending.pop()
        for spec in metadata.requires(dist) or []:
            req = Requirement(spec)
            wanted = extras or frozenset({""})
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in wanted):
                continue
            key = (canonicalize_name(req.name), frozenset(req.extras))
            if key in seen:
                continue
            seen.add(key)
            distributions.add(key[0])
            pending.append((req.name, key[1]))
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if any(canonicalize_name(d) in distributions for d in dists)
    }


def _python(script: str, *args: str) -> str:
    done = subprocess.run(
        [_PYTHON, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
        cwd=REPO_ROOT,
    )
    return done.stdout.strip().splitlines()[-1]


def _env() -> dict[str, str]:
    """The children's environment: a function's, and bytecode written to and read from
    ``_BYTECODE`` (a deployed function loads its code's bytecode: infra/bytecode.py; the
    libraries' wheels are installed compiled), whatever this shell says."""
    env = {**os.environ, **ENV, "PYTHONPYCACHEPREFIX": str(_BYTECODE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # snapledger from the sources (the functions' package holds them, not a distribution)
    shared = str(REPO_ROOT / "shared")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [shared, env.get("PYTHONPATH")]))
    return env
