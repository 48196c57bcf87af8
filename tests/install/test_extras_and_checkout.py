"""What an install without an extra, or without a checkout, answers: the extra or the
checkout it needs, in one line (issue 30, "install")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from snapledger.cli import main as cli
from snapledger.extras import MissingExtraError, raise_missing_extra
from snapledger.local import dynamodb_local
from snapledger.local.dynamodb_local import NEEDS_CHECKOUT, DynamoDBLocal, NotACheckoutError
from snapledger.local.runtime import local_home
from snapledger.local.up import run_local_up


def run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter where ``module`` cannot be imported (as if the extra
    that installs it were not installed)."""
    blocked = f"import sys; sys.modules[{module!r}] = None\n"
    return subprocess.run(
        [sys.executable, "-c", blocked + code], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "code",
    [
        "from snapledger.client import SnapshotWriter",
        "from snapledger.client.reader import SnapshotReader",
    ],
)
def test_the_client_without_pyarrow_names_the_client_extra(code):
    done = run_without("pyarrow", code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "snapledger.extras.MissingExtraError: snapledger.client needs pyarrow, which is not "
        "installed: pip install 'snapledger[client]'"
    )


@pytest.mark.parametrize("module", ["click", "rich"])
def test_the_command_without_click_or_rich_names_the_cli_extra(module):
    done = run_without(module, "from snapledger.cli.main import main")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"the snapledger command needs {module}, which is not installed: "
            "pip install 'snapledger[cli]'"
        )
    )


def test_the_control_client_needs_no_extra():
    # The CLI's --json users and scripts with only [cli] use it; pyarrow stays optional.
    done = run_without("pyarrow", "from snapledger.client import Snapledger")
    assert done.returncode == 0, done.stderr


def test_a_module_missing_for_another_reason_is_reported_as_it_is():
    missing = ModuleNotFoundError("No module named 'numpy'", name="numpy")
    with pytest.raises(ModuleNotFoundError) as raised:
        raise_missing_extra(missing, "client")
    assert raised.value is missing
    assert not isinstance(raised.value, MissingExtraError)


@pytest.fixture
def installed_from_a_wheel(tmp_path, monkeypatch):
    """snapledger as a wheel installs it: no checkout around the package."""
    site_packages = tmp_path / "lib" / "python3" / "site-packages"
    site_packages.mkdir(parents=True)
    monkeypatch.setattr(dynamodb_local, "REPO_ROOT", tmp_path / "lib" / "python3")
    monkeypatch.delenv("SNAPLEDGER_LOCAL_HOME", raising=False)
    return tmp_path


def test_the_checkout_is_recognised():
    assert dynamodb_local.in_checkout()


def test_local_up_outside_a_checkout_says_so_in_one_line(installed_from_a_wheel, capsys):
    assert run_local_up(home=None) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"snapledger: {NEEDS_CHECKOUT}\n"
    made = [p.name for p in installed_from_a_wheel.rglob("*")]
    assert made == ["lib", "python3", "site-packages"]  # no .local/state beside them


def test_local_outside_a_checkout_says_so_in_one_line(installed_from_a_wheel, capsys):
    status = cli.main(["--local", "latest", "orders", "0"])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err == f"snapledger: {NEEDS_CHECKOUT}\n"  # not even the "starting" notice


def test_the_local_runtime_needs_a_checkout(installed_from_a_wheel, tmp_path):
    with pytest.raises(NotACheckoutError):
        local_home(tmp_path / "home")
    # DynamoDB Local is looked for in the checkout only: not beside site-packages, nor
    # with a pointer to a script the wheel does not hold.
    with pytest.raises(NotACheckoutError, match="checkout"):
        DynamoDBLocal(install_dir=tmp_path / "nothing-here").start()


def test_in_a_checkout_a_missing_dynamodb_local_names_its_install_script(tmp_path):
    with pytest.raises(dynamodb_local.DynamoDBLocalError) as raised:
        DynamoDBLocal(install_dir=tmp_path / "nothing-here").start()
    assert str(dynamodb_local.INSTALL_SCRIPT) in str(raised.value)
    assert dynamodb_local.INSTALL_SCRIPT.is_file()
