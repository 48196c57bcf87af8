"""The real Restate server, started once per session (see harness.py). Tests that use it
are marked `restate`; install it with tools/install-restate.sh (or `make setup`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.restate.harness import RestateHarness


@pytest.fixture(scope="session")
def restate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestateHarness]:
    """moto's S3 on loopback, restate-server snapshotting into it, and the test service
    registered; all stopped at the end of the session, also when a test failed."""
    harness = RestateHarness(tmp_path_factory.mktemp("restate"))
    with harness:
        yield harness
    print(f"\nrestate harness timings (s): {harness.timings}", file=sys.stderr)
