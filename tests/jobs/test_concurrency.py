"""Validation beside the write: its failure wins and cancels the write."""

from __future__ import annotations

import pytest

from jobs.concurrency import validate_while_writing
from jobs.errors import ChangelogError

pytestmark = pytest.mark.spark


def test_a_validation_failure_cancels_the_write_and_is_raised(spark) -> None:
    seen: list[BaseException] = []

    def long_write() -> int:
        try:  # tens of seconds of work unless cancelled
            return int(spark.range(0, 4 * 10**10, numPartitions=2).selectExpr("sum(id)").first()[0])
        except BaseException as error:
            seen.append(error)
            raise

    def failing_validation() -> None:
        raise ChangelogError("bad changelog data: x")

    with pytest.raises(ChangelogError, match="bad changelog data"):
        validate_while_writing(spark, failing_validation, long_write)
    assert len(seen) == 1 and "cancel" in str(seen[0]).lower()


def test_the_write_error_is_raised_when_validation_passes(spark) -> None:
    def failing_write() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        validate_while_writing(spark, lambda: {0: 1}, failing_write)


def test_both_results_come_back(spark) -> None:
    def write() -> int:
        return int(spark.range(10).selectExpr("sum(id)").first()[0])

    assert validate_while_writing(spark, lambda: {0: 3}, write) == ({0: 3}, 45)
