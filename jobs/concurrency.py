"""Running the changelog's validation beside the write that depends on it.

A job's validation pass and its write read the same changelog but need each other only
at the end: nothing is published until validation has passed. Run one after the other,
each pays its own fixed costs (planning, task launch, a final stage on one core) while
the other core idles; run together, those gaps overlap. The write runs on a second
thread in a job group of its own, so a validation failure cancels it at once rather
than after a full write of bad data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pyspark import InheritableThread
from pyspark.sql import SparkSession

from snapledger.ids import new_ulid

_CANCEL_POLL_S = 0.2
T = TypeVar("T")
V = TypeVar("V")


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None

    def get(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def validate_while_writing(
    spark: SparkSession, validate: Callable[[], V], write: Callable[[], T]
) -> tuple[V, T]:
    """``(validate(), write())``, run at once; a validation error wins over the write's
    (a bad changelog explains a failed write better than Spark does) and cancels it."""
    context = spark.sparkContext
    group = f"snapledger-write-{new_ulid()}"
    written: _Outcome[T] = _Outcome()

    def run_write() -> None:
        context.setJobGroup(group, "write a job's result", interruptOnCancel=True)
        try:
            written.value = write()
        except BaseException as error:  # handed to the calling thread
            written.error = error

    # An InheritableThread carries the caller's Spark local properties to the write.
    writer = InheritableThread(target=run_write, name=group)
    writer.start()
    try:
        validated = validate()
    except BaseException:
        # A write is several Spark jobs, and one may not have started yet: cancel until the
        # writer stops. Its files are staged; the caller deletes them once it has stopped.
        while writer.is_alive():
            context.cancelJobGroup(group)
            writer.join(_CANCEL_POLL_S)
        raise
    writer.join()
    return validated, written.get()
