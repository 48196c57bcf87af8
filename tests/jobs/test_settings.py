"""A job's SQL settings hold while it runs and are put back after."""

from __future__ import annotations

import pytest

from jobs.settings import JOB_SQL_SETTINGS, job_settings

pytestmark = pytest.mark.spark

TWO_LEVEL = "spark.sql.codegen.aggregate.map.twolevel.enabled"


@pytest.mark.parametrize("before", ["true", None])
def test_settings_apply_inside_and_are_restored(spark, before) -> None:
    assert JOB_SQL_SETTINGS[TWO_LEVEL] == "false"
    if before is None:
        spark.conf.unset(TWO_LEVEL)
    else:
        spark.conf.set(TWO_LEVEL, before)
    seen_before = spark.conf.get(TWO_LEVEL)
    with pytest.raises(RuntimeError), job_settings(spark):
        assert spark.conf.get(TWO_LEVEL) == "false"
        raise RuntimeError("a failing job")
    assert spark.conf.get(TWO_LEVEL) == seen_before
