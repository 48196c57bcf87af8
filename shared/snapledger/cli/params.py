"""The CLI's argument types: each refuses a bad value in one line that shows the accepted forms."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import click

from snapledger.layout import STREAM_PATTERN, ULID_PATTERN
from snapledger.layouts.lineage import SNAPSHOT_ID_PATTERN
from snapledger.layouts.restate import SNAPSHOT_ID_PATTERN as RESTATE_ID_PATTERN

STREAM_FORM = (
    "1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, e.g. orders"
)
SNAPSHOT_ID_FORM = (
    "26 characters, digits and capital letters but I, L, O and U (a ULID, as `snapledger "
    "list` shows them, e.g. 01J8AMJ9S95949YC1ATZ6TTB94), or a Restate snapshot's id "
    "(snap_ and up to 64 letters or digits, e.g. snap_16JRxlSCK1LJ3Z77LmT8Pap)"
)
RESTATE_SNAPSHOT_ID_FORM = (
    "snap_ and 1 to 64 letters or digits (a Restate snapshot id, as `snapledger list` "
    "shows them, e.g. snap_13I5BGZ79mYW4Y7O2Iyohyx)"
)
#: The words for each pattern a function checks a field against (never show the pattern).
PATTERN_WORDS = {
    f"^{STREAM_PATTERN}$": f"a stream name: {STREAM_FORM}",
    f"^{ULID_PATTERN}$": f"a snapshot id: {SNAPSHOT_ID_FORM}",
    f"^{SNAPSHOT_ID_PATTERN}$": f"a snapshot id: {SNAPSHOT_ID_FORM}",
    f"^{RESTATE_ID_PATTERN}$": f"a Restate snapshot id: {RESTATE_SNAPSHOT_ID_FORM}",
}
TIME_FORMS = "ISO-8601 with a timezone, e.g. 2026-05-01T12:00Z or 2026-05-01T12:00:00+02:00"
BASE_FORMS = (
    "the latest (no option), --snapshot-id ID, --as-of-lsn LSN or --as-of-time "
    "ISO-8601-with-timezone"
)


class NonNegative(click.ParamType):
    name = "N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            try:
                number = int(value)
            except ValueError:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if number < 0:
            self.fail(f"{number} is negative: use 0 or more", param, ctx)
        return number


class PartitionList(click.ParamType):
    name = "P,P,..."

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> list[int]:
        if isinstance(value, list):
            return value
        try:
            values = [int(part) for part in str(value).split(",") if part.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a list of partitions: use e.g. 0,1,2", param, ctx)
        if not values or any(v < 0 for v in values):
            self.fail("partitions are numbers 0 or more, e.g. 0,1,2", param, ctx)
        return values


class PartitionLsn(click.ParamType):
    name = "PARTITION=LSN"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        if isinstance(value, tuple):
            return value
        partition, sep, lsn = str(value).partition("=")
        try:
            pair = (int(partition), int(lsn))
        except ValueError:
            pair = (-1, -1)
        if not sep or min(pair) < 0:
            self.fail(f"{value!r} is not PARTITION=LSN, e.g. 3=18000", param, ctx)
        return pair


class Time(click.ParamType):
    """An instant: ISO-8601 with a timezone (``Z`` or an offset); passed on as written."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a time: use {TIME_FORMS}", param, ctx)
        if parsed.tzinfo is None:
            self.fail(f"{value!r} has no timezone: use {TIME_FORMS}", param, ctx)
        return str(value)


class Matching(click.ParamType):
    """A name or id of a pattern the functions check, refused here in words first."""

    def __init__(self, name: str, pattern: str, what: str, *, upper: bool = False) -> None:
        self.name, self._pattern, self._what, self._upper = name, re.compile(pattern), what, upper

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if self._upper and not self._pattern.fullmatch(text):
            text = text.upper()  # a ULID typed in lower case
        if not self._pattern.fullmatch(text):
            self.fail(f"{value!r} is not {self._what}", param, ctx)
        return text


class BoundedText(click.ParamType):
    """Free text of at most ``max_chars`` characters (the functions' bound, checked first)."""

    name = "TEXT"

    def __init__(self, max_chars: int, *, min_chars: int = 0) -> None:
        self._max, self._min = max_chars, min_chars

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not self._min <= len(text) <= self._max:
            self.fail(f"has {len(text)} characters: give {self._min} to {self._max}", param, ctx)
        return text


NON_NEGATIVE = NonNegative()
STREAM_NAME = Matching("STREAM", STREAM_PATTERN, f"a stream name: use {STREAM_FORM}")
SNAPSHOT_ID = Matching("ID", SNAPSHOT_ID_PATTERN, f"a snapshot id: {SNAPSHOT_ID_FORM}", upper=True)
RESTATE_SNAPSHOT_ID = Matching(
    "SNAPSHOT_ID", RESTATE_ID_PATTERN, f"a Restate snapshot id: {RESTATE_SNAPSHOT_ID_FORM}"
)
PARTITIONS = PartitionList()
PARTITION_LSN = PartitionLsn()
TIME = Time()
