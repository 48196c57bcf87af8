"""Stage asset directories at synth time, in plain Python: no Docker, no network.

CDK fingerprints an asset directory by content, so staging into a fresh temporary directory
on every synth still gives a stable asset hash while the sources do not change.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from infra.bytecode import compile_for_lambda, lambda_interpreter

# Never shipped: bytecode, caches, editor and test leftovers.
_IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.pyo", ".mypy_cache", ".pytest_cache", ".ruff_cache", "*.egg-info"
)
_staging_root: Path | None = None


def _fresh_dir(label: str) -> Path:
    """A new empty directory under this process's staging root (removed at exit)."""
    global _staging_root  # noqa: PLW0603 - one lazily created root per process
    if _staging_root is None or not _staging_root.exists():
        _staging_root = Path(tempfile.mkdtemp(prefix="snapledger-cdk-"))
        atexit.register(shutil.rmtree, _staging_root, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_staging_root))


def stage_function_code(
    functions_dir: Path,
    shared_package_dir: Path,
    excluded_subpackages: tuple[str, ...],
    *,
    compiled: bool = True,
) -> Path:
    """A directory with ``functions/`` and ``snapledger/`` at its top, as Lambda imports them.

    ``excluded_subpackages`` (e.g. ``local``, ``cli``) are workstation-only parts of
    ``snapledger`` left out of the function code. ``compiled``: with each module's bytecode
    for the Lambda runtime's Python, when this machine has that Python (infra/bytecode.py).
    """
    if not functions_dir.is_dir():
        raise FileNotFoundError(f"function sources not found: {functions_dir}")
    if not (shared_package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"the snapledger package was not found at {shared_package_dir}")
    out = _fresh_dir("functions")
    shutil.copytree(functions_dir, out / functions_dir.name, ignore=_IGNORED)
    package = out / shared_package_dir.name
    shutil.copytree(shared_package_dir, package, ignore=_IGNORED)
    for name in excluded_subpackages:
        shutil.rmtree(package / name, ignore_errors=True)
        (package / f"{name}.py").unlink(missing_ok=True)
    if compiled:
        compile_for_lambda(out, lambda_interpreter())
    return out


def stage_python_package(package_dir: Path) -> Path:
    """A directory holding ``package_dir`` as a package, so its zip is a ``--py-files`` archive.

    CDK zips a directory asset's *contents*; wrapping the package one level down puts
    ``jobs/__init__.py`` at the zip's root, where Spark's Python workers import it from.
    """
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"not a Python package: {package_dir}")
    out = _fresh_dir(package_dir.name)
    shutil.copytree(package_dir, out / package_dir.name, ignore=_IGNORED)
    return out


def stage_job_package(
    jobs_dir: Path, shared_package_dir: Path, shared_modules: tuple[str, ...]
) -> Path:
    """The job's ``--py-files`` directory: ``jobs/``, and beside it the standard-library-only
    modules of ``snapledger`` it shares with the functions (``shared_modules``, relative to
    the package, e.g. ``core/checksums.py``), so one rule is one piece of code everywhere."""
    out = stage_python_package(jobs_dir)
    for module in shared_modules:
        source = shared_package_dir / module
        if not source.is_file():
            raise FileNotFoundError(f"a module the jobs share was not found: {source}")
        target = out / shared_package_dir.name / module
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return out


def stage_python_layer(package_dir: Path) -> Path:
    """A Lambda layer directory holding ``package_dir`` (a pure-Python package) as
    ``python/{name}/``, where the Python runtimes put a layer on ``sys.path``."""
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"not a Python package: {package_dir}")
    out = _fresh_dir(f"layer-{package_dir.name}")
    shutil.copytree(package_dir, out / "python" / package_dir.name, ignore=_IGNORED)
    return out
