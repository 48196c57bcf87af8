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
    seen_before = {name: spark.conf.get(name) for name in JOB_SQL_SETTINGS}
    with pytest.raises(RuntimeError), job_settings(spark):
        assert {name: spark.conf.get(name) for name in JOB_SQL_SETTINGS} == JOB_SQL_SETTINGS
        raise RuntimeError("a failing job")
    assert {name: spark.conf.get(name) for name in JOB_SQL_SETTINGS} == seen_before
