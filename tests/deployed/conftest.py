"""The synthesized app stood up once per module in an emulated account with IAM enforced.

The app is synthesized once per session (tests/infra/conftest.py). The scenario runs every
function path under its synthesized role; ``iam`` holds every authorization decision, so a
test can name a refused call and list the granted actions no path used.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from moto import mock_aws

from tests.deployed.deployment import EmulatedDeployment, stand_up
from tests.deployed.iam_emulation import DecisionLog, enforced_iam
from tests.deployed.scenario import Scenario, run_scenario
from tests.infra.conftest import synthesize_app


@dataclass
class Deployed:
    app: EmulatedDeployment
    iam: DecisionLog
    scenario: Scenario


@pytest.fixture(scope="module")
def deployed() -> Iterator[Deployed]:
    synth = synthesize_app()
    with mock_aws(), enforced_iam() as log:
        app = stand_up(synth)
        yield Deployed(app=app, iam=log, scenario=run_scenario(app))
