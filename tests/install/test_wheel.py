"""The README's install line, run as written in a fresh virtualenv on a wheel built here.

The wheel (``tools/project-uv build --wheel``) must hold the ``snapledger`` package alone,
install with its ``[cli]`` extra from the package index pip is configured with, and give a
``snapledger`` command that answers ``--help``; without ``[client]`` the client library
names that extra, and ``--local`` / ``local up`` say in one line that they need a checkout.
About 20 s, most of it pip resolving and installing the dependencies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from snapledger.local.dynamodb_local import NEEDS_CHECKOUT
from tests.install.readme import install_lines

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
#: uv as `make` runs it: `uv run` names itself in $UV; else tools/project-uv finds one.
UV = os.environ.get("UV") or str(REPO_ROOT / "tools" / "project-uv")


def run(command: list[str] | str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=300, **kwargs
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the wheel in ``dist/``, as the README's build line leaves it."""
    here = tmp_path_factory.mktemp("install")
    built = run([UV, "build", "--wheel", "--out-dir", str(here / "dist")], cwd=REPO_ROOT)
    assert built.returncode == 0, built.stderr
    return here


@pytest.fixture(scope="module")
def wheel(workdir: Path) -> Path:
    (found,) = (workdir / "dist").glob("snapledger-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(workdir: Path) -> Path:
    """A fresh virtualenv where the README's install line ran as written; its bin folder."""
    env_dir = workdir / "venv"
    # uv seeds pip in a second where `python -m venv` spends ~15 s in ensurepip.
    made = run([UV, "venv", "--quiet", "--seed", "--python", sys.executable, str(env_dir)])
    assert made.returncode == 0, made.stderr
    bin_dir = env_dir / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env["VIRTUAL_ENV"] = str(env_dir)
    env.pop("PYTHONPATH", None)
    env["PIP_NO_COMPILE"] = "1"  # no .pyc for botocore's thousands of modules: seconds saved
    (line,) = [line for line in install_lines() if line.startswith("pip install")]
    done = run(["bash", "-c", line], cwd=workdir, env=env)
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    return bin_dir


def test_the_wheel_holds_the_snapledger_package_alone(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/")[0] for name in archive.namelist()}
    assert {name for name in top if not name.endswith(".dist-info")} == {"snapledger"}


def test_the_readme_install_line_gives_a_working_command(installed: Path):
    done = run([str(installed / "snapledger"), "--help"], cwd=installed)
    assert done.returncode == 0, done.stderr
    assert "Usage: snapledger" in done.stdout
    # What it installed is the wheel's snapledger, not the checkout's packages.
    probe = "import importlib.util as u; print([bool(u.find_spec(m)) for m in MODULES])"
    probe = probe.replace("MODULES", repr(("functions", "infra", "jobs")))
    found = run([str(installed / "python"), "-c", probe], cwd=installed)
    assert found.stdout.strip() == "[False, False, False]", found.stderr


def test_without_the_client_extra_the_writer_names_it(installed: Path):
    done = run(
        [str(installed / "python"), "-c", "from snapledger.client import SnapshotWriter"],
        cwd=installed,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].endswith("pip install 'snapledger[client]'")


@pytest.mark.parametrize("args", [["--local", "latest", "orders", "0"], ["local", "up"]])
def test_local_from_the_wheel_says_in_one_line_it_needs_a_checkout(installed: Path, args):
    done = run([str(installed / "snapledger"), *args], cwd=installed)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"snapledger: {NEEDS_CHECKOUT}\n")
    # Nothing was made beside site-packages (where the checkout's .local would have been).
    assert not list((installed.parent / "lib").glob("python*/.local"))
