"""A rejection's reason from its problems: the first few, and how many more."""

from __future__ import annotations

from collections.abc import Sequence

#: The problems a rejection's reason names; the rest are counted.
MAX_REPORTED_PROBLEMS = 5


def join_problems(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:MAX_REPORTED_PROBLEMS])
    more = len(problems) - MAX_REPORTED_PROBLEMS
    return shown + (f"; and {more} more problem(s)" if more > 0 else "")
