"""A budget that runs out in the middle of a lineage stops GC within a bounded number of
requests, wherever it runs out; runs that each stop early still finish the work."""

from __future__ import annotations

import math
import threading
from datetime import timedelta

from snapledger.gc_settings import GcConfig
from snapledger.models.gc_commands import MAX_EXPIRE_PER_COMMAND, MAX_MARK_PER_COMMAND
from snapledger.services.gc import run_gc
from tests.gc.support import assert_ledger_and_store_agree, gc_deps, register, statuses

DUE = 2 * MAX_EXPIRE_PER_COMMAND + 10  # three expire transactions, two mark transactions
# min_count 3, no min_age; one thread, as the budget counts its checks (every thread checks)
CONFIG = GcConfig(default_min_age_hours=0, gc_workers=1)


# (checks with plenty of time, checks on the reserve): out of time at different steps
BUDGETS = [(2, 0), (4, 3), (3, 1), (5, 0), (6, 3), (4, 1), (7, 2)]


class Counted:
    """Every method call of ``inner`` counts as a request (an adapter call is at least one)."""

    def __init__(self, inner, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def __getattr__(self, name):
        found = getattr(self._inner, name)
        if not callable(found) or name.startswith("_"):
            return found

        def call(*args, **kwargs):
            self._log.append(name)
            return found(*args, **kwargs)

        return call


class FlippingBudget:
    """Plenty of time for ``checks`` checks, then the reserve (30 s) for ``draining`` more
    (new work stops, work in flight finishes), then none. Remembers how many requests had
    been made when it first answered with the reserve, and with none."""

    def __init__(self, checks: int, draining: int, log: list[str]) -> None:
        self._answers = [1_000.0] * checks + [20.0] * draining
        self._log = log
        self._lock = threading.Lock()
        self.at_reserve: int | None = None
        self.at_none: int | None = None

    def __call__(self) -> float:
        with self._lock:
            answer = self._answers.pop(0) if self._answers else 0.0
            if answer < CONFIG.stop_with_seconds_left and self.at_reserve is None:
                self.at_reserve = len(self._log)
            if answer == 0.0 and self.at_none is None:
                self.at_none = len(self._log)
            return answer


def test_a_budget_running_out_mid_lineage_stops_within_one_request(ledger, store, clock):
    # Given one lineage with 90 due snapshots (more than two transactions of each kind)
    for lsn in range(1, DUE + 4):
        register(ledger, store, clock, lsn * 10, files=1)
    clock.advance(timedelta(hours=1))
    log: list[str] = []
    deps = gc_deps(Counted(ledger, log), Counted(store, log), clock)
    runs, flipped = 0, 0
    # When runs each get a few budget checks, until one completes
    while True:
        runs += 1
        assert runs < 60, "GC made no progress with a few checks per run"
        log.clear()
        checks, draining = BUDGETS[runs % len(BUDGETS)]
        budget = FlippingBudget(checks=checks, draining=draining, log=log)
        report = run_gc(deps, config=CONFIG, remaining_seconds=budget)
        if report.complete:
            break
        # Then each stopped run made at most one request after the budget ran out (one
        # in flight), whatever step of the lineage it was in
        # Then once its time was down to the reserve it made at most the requests that
        # finish what is in flight: one DeleteObjects and the lineage's marks; and once
        # it was out of time, at most the one request in flight
        assert budget.at_reserve is not None
        in_flight = log[budget.at_reserve :]
        assert len(in_flight) <= 2 + math.ceil(DUE / MAX_MARK_PER_COMMAND), in_flight
        if budget.at_none is not None:
            flipped += 1
            assert len(log[budget.at_none :]) <= 1, log[budget.at_none :]
    # And together they did the work: every due snapshot DELETED, the newest three kept
    assert runs > 3 and flipped >= 1  # the work did not fit; budgets ran out at many points
    final = list(statuses(ledger).values())
    assert final.count("DELETED") == DUE and final.count("REGISTERED") == 3
    assert_ledger_and_store_agree(ledger, store)
