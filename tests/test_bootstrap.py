"""A fresh machine: no uv, a system Python that refuses `pip install` (PEP 668), an empty HOME.

`make setup` runs uv through tools/project-uv, which bootstraps the pinned uv into
.local/uv with tools/bootstrap-uv.sh; cdk.json runs the CDK app through tools/cdk-app. Each
test copies the scripts into a temporary "repository" and runs them with `env -i` (only HOME
and PATH), as a newcomer's shell would. The network tests fetch uv from PyPI (~8 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from infra.names import REPO_ROOT

TOOLS = REPO_ROOT / "tools"
SYSTEM_PYTHON = Path("/usr/bin/python3")
CLEAN_PATH = "/usr/bin:/bin"

needs_system_python = pytest.mark.skipif(
    not SYSTEM_PYTHON.exists(), reason="no system Python at /usr/bin/python3"
)


def pinned_uv_version() -> str:
    """The version tools/bootstrap-uv.sh installs (its one pin)."""
    found = re.search(r'^version="([^"]+)"$', (TOOLS / "bootstrap-uv.sh").read_text(), re.M)
    assert found, 'tools/bootstrap-uv.sh has no version="..." line'
    return found.group(1)


def fake_repo(tmp_path: Path, *scripts: str) -> Path:
    """A directory laid out like the repository, holding copies of the given tools."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    for script in scripts:
        shutil.copy2(TOOLS / script, repo / "tools" / script)
    return repo


def run_clean(
    argv: list[str], tmp_path: Path, path: str = CLEAN_PATH, env: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Runs argv under `env -i` with a fresh HOME and the given PATH, as a new user would."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        ["/usr/bin/env", "-i", f"HOME={home}", f"PATH={path}", *env, *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def write_script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def fake_bin(tmp_path: Path, name: str, body: str) -> Path:
    """A directory holding the executable shell script `name`, to put first on PATH."""
    write_script(tmp_path / "fakebin" / name, body)
    return tmp_path / "fakebin"


def python_without(tmp_path: Path, *modules: str) -> Path:
    """A `python3` that fails like Debian's without python3-venv / python3-pip for `-m <module>`."""
    cases = "".join(
        f'if [[ "$1 $2" == "-m {module}" ]]; then echo "No module named {module}" >&2; exit 1; fi\n'
        for module in modules
    )
    return fake_bin(tmp_path, "python3", f'{cases}exec {SYSTEM_PYTHON} "$@"')


def assert_pinned_uv(repo: Path, tmp_path: Path) -> None:
    uv = repo / ".local" / "uv" / "bin" / "uv"
    version = run_clean([str(uv), "--version"], tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.split()[:2] == ["uv", pinned_uv_version()]


# --- the bootstrap (network: PyPI) -------------------------------------------------------


@needs_system_python
@pytest.mark.slow
def test_project_uv_bootstraps_the_pinned_uv_under_the_system_python(tmp_path):
    repo = fake_repo(tmp_path, "project-uv", "bootstrap-uv.sh")

    first = run_clean([str(repo / "tools" / "project-uv"), "--version"], tmp_path)

    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[:2] == ["uv", pinned_uv_version()]
    assert "installing uv" in first.stderr
    assert_pinned_uv(repo, tmp_path)
    # Once there, it is reused: nothing is fetched again.
    again = run_clean([str(repo / "tools" / "bootstrap-uv.sh")], tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(repo / ".local" / "uv" / "bin" / "uv")
    assert again.stderr == ""


@needs_system_python
@pytest.mark.slow
def test_bootstrap_without_venv_unpacks_the_wheel_pip_downloads(tmp_path):
    repo = fake_repo(tmp_path, "bootstrap-uv.sh")
    no_venv = python_without(tmp_path, "venv")

    result = run_clean(
        [str(repo / "tools" / "bootstrap-uv.sh")], tmp_path, path=f"{no_venv}:{CLEAN_PATH}"
    )

    assert result.returncode == 0, result.stderr
    assert "downloading the uv wheel" in result.stderr
    assert_pinned_uv(repo, tmp_path)


# --- offline ----------------------------------------------------------------------------


@needs_system_python
def test_bootstrap_without_venv_or_pip_names_the_package_to_install(tmp_path):
    repo = fake_repo(tmp_path, "bootstrap-uv.sh")
    bare = python_without(tmp_path, "venv", "pip")

    result = run_clean(
        [str(repo / "tools" / "bootstrap-uv.sh")], tmp_path, path=f"{bare}:{CLEAN_PATH}"
    )

    assert result.returncode == 1
    assert "neither a working venv module nor pip" in result.stderr
    assert "apt-get install python3-venv" in result.stderr
    assert not (repo / ".local" / "uv").exists()


@needs_system_python
def test_bootstrap_that_cannot_reach_pypi_says_so_and_installs_nothing(tmp_path):
    repo = fake_repo(tmp_path, "bootstrap-uv.sh")
    # A closed local port as the package index: pip fails at once, as it would offline.
    unreachable = ("PIP_INDEX_URL=http://127.0.0.1:9/simple", "PIP_RETRIES=0")

    result = run_clean([str(repo / "tools" / "bootstrap-uv.sh")], tmp_path, env=unreachable)

    assert result.returncode == 1
    assert "could not fetch uv==" in result.stderr
    assert "check network access to pypi.org" in result.stderr
    assert not (repo / ".local" / "uv").exists()


def test_project_uv_prefers_the_uv_on_path(tmp_path):
    repo = fake_repo(tmp_path, "project-uv", "bootstrap-uv.sh")
    uv_on_path = fake_bin(tmp_path, "uv", 'echo "uv on PATH: $*"')

    result = run_clean(
        [str(repo / "tools" / "project-uv"), "sync", "--frozen"],
        tmp_path,
        path=f"{uv_on_path}:{CLEAN_PATH}",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "uv on PATH: sync --frozen\n"
    assert not (repo / ".local").exists()


# --- cdk.json's app ----------------------------------------------------------------------


def test_cdk_json_runs_the_app_without_uv():
    app = json.loads((REPO_ROOT / "cdk.json").read_text())["app"]

    assert app == "tools/cdk-app"
    assert (REPO_ROOT / app).stat().st_mode & 0o111


def test_cdk_app_without_setup_says_to_run_make_setup(tmp_path):
    repo = fake_repo(tmp_path, "cdk-app")

    result = run_clean([str(repo / "tools" / "cdk-app")], tmp_path)

    assert result.returncode == 1
    assert "run `make setup` first" in result.stderr


def synced_repo(tmp_path: Path) -> Path:
    """A repository whose .venv was synced by `make setup`; its python echoes its arguments."""
    repo = fake_repo(tmp_path, "cdk-app")
    for name in ("pyproject.toml", "uv.lock"):
        (repo / name).write_text("")
    write_script(repo / ".venv" / "bin" / "python", 'echo "python $* in $PWD"')
    (repo / ".venv" / ".synced").touch()
    return repo


def test_cdk_app_runs_the_app_with_the_project_virtualenv(tmp_path):
    repo = synced_repo(tmp_path)

    result = run_clean([str(repo / "tools" / "cdk-app")], tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"python -m infra.app in {repo}\n"


def test_cdk_app_refuses_a_virtualenv_older_than_the_lock(tmp_path):
    repo = synced_repo(tmp_path)
    synced = (repo / ".venv" / ".synced").stat().st_mtime
    lock = repo / "uv.lock"
    os.utime(lock, (synced + 10, synced + 10))

    result = run_clean([str(repo / "tools" / "cdk-app")], tmp_path)

    assert result.returncode == 1
    assert "uv.lock changed since" in result.stderr
    assert "run `make setup` first" in result.stderr
