"""Changelog coverage, the one rule of the launch and the jobs: which segments replay
(base, target], or an error naming the file and the LSNs at fault."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snapledger.core.coverage import (
    EMPTY_STATE_LSN,
    CoverageError,
    changelog_range,
    segments_named,
)
from snapledger.layout import SegmentLocation, segment_name


def segs(*spans: tuple[int, int]) -> list[SegmentLocation]:
    return [SegmentLocation("orders", 3, a, b) for a, b in spans]


def spans(found) -> list[tuple[int, int]]:
    return [(s.first_lsn, s.last_lsn) for s in found.segments]


def refused(segments, base, target, message: str) -> None:
    with pytest.raises(CoverageError, match=re.escape(message)):
        changelog_range("orders", 3, segments, base, target)


def test_the_segments_are_the_segment_names_directly_in_the_folder():
    names = [
        segment_name(10, 19),
        segment_name(0, 9),
        "_SUCCESS",  # Hadoop's markers and checksums are not data
        f".{segment_name(0, 9)}.crc",
        f"old/{segment_name(0, 99)}",  # a sub-folder is not the changelog
        "",  # a folder marker object
    ]
    assert sorted((s.first_lsn, s.last_lsn) for s in segments_named("orders", 3, names)) == [
        (0, 9),
        (10, 19),
    ]


@pytest.mark.parametrize("name", ["segment-1.parquet", "9-10.parquet", segment_name(9, 8)])
def test_any_other_file_in_the_folder_is_skipped_and_named_to_the_caller(name):
    skipped: list[str] = []
    found = segments_named("orders", 3, [segment_name(0, 9), name], skipped=skipped.append)
    assert [(s.first_lsn, s.last_lsn) for s in found] == [(0, 9)]
    assert skipped == [f"changelog/orders/3/{name}"]


def test_reads_only_the_segments_that_hold_the_range():
    found = changelog_range("orders", 3, segs((0, 9), (10, 19), (20, 29), (30, 39)), 12, 25)
    assert spans(found) == [(10, 19), (20, 29)]
    assert (found.stream, found.partition, found.base_lsn, found.target_lsn) == (
        "orders",
        3,
        12,
        25,
    )


def test_the_segments_are_named_by_their_keys():
    [segment] = changelog_range("orders", 3, segs((0, 9)), None, None).segments
    assert segment.key == "changelog/orders/3/" + segment_name(0, 9)
    assert segment.name == segment_name(0, 9)


def test_records_at_most_counts_the_lsns_the_range_applies():
    four = segs((0, 9), (10, 19), (20, 29), (30, 39))
    assert changelog_range("orders", 3, four, 12, 25).records_at_most == 13  # 13..25
    assert changelog_range("orders", 3, four, None, None).records_at_most == 40
    assert changelog_range("orders", 3, segs((0, 9)), 9, None).records_at_most == 0


def test_latest_available_ends_at_the_end_of_the_contiguous_run():
    assert (
        changelog_range("orders", 3, segs((0, 99), (100, 199), (300, 399)), 50, None).target_lsn
        == 199
    )
    assert changelog_range("orders", 3, segs((0, 9), (10, 19)), None, None).target_lsn == 19
    assert spans(changelog_range("orders", 3, segs((0, 9), (20, 29)), None, None)) == [(0, 9)]


def test_nothing_readable_after_the_base_makes_the_base_the_state():
    for segments in (segs((0, 9)), segs((0, 9), (20, 29)), []):
        found = changelog_range("orders", 3, segments, 9, None)
        assert (found.target_lsn, found.segments) == (9, ())


def test_a_target_at_the_base_reads_nothing_and_below_it_is_refused():
    found = changelog_range("orders", 3, segs((0, 200)), 100, 100)
    assert (found.target_lsn, found.segments) == (100, ())
    refused(segs((0, 200)), 100, 50, "orders/3: target LSN 50 is below the base snapshot's LSN 100")


def test_segments_wholly_at_or_below_the_base_are_not_read_and_may_overlap():
    found = changelog_range("orders", 3, segs((0, 50), (10, 40), (51, 99)), 50, None)
    assert spans(found) == [(51, 99)]


def test_a_bootstrap_starts_from_empty_state_and_needs_lsn_0():
    found = changelog_range("orders", 3, segs((0, 19), (20, 29)), None, None)
    assert (found.base_lsn, found.target_lsn) == (EMPTY_STATE_LSN, 29)
    refused([], None, None, "changelog/orders/3/: no changelog segments to bootstrap orders/3")
    refused(
        segs((10, 19)),
        None,
        None,
        f"changelog/orders/3/{segment_name(10, 19)}: gap before this segment: LSNs 0..9 are "
        "missing (a bootstrap needs the changelog from LSN 0); upload orders/3's segments "
        "from LSN 0, or, if its log was trimmed, restore it from a snapshot instead",
    )
    refused(segs((10, 19)), None, 15, "LSNs 0..9 are missing (a bootstrap needs")


@pytest.mark.parametrize(
    ("spans_", "base", "target", "message"),
    [
        # a gap inside the range names the file after it, and the one before it
        (
            [(0, 99), (100, 199), (300, 399)],
            50,
            350,
            f"{segment_name(300, 399)}: gap before this segment: LSNs 200..299 are missing "
            f"after {segment_name(100, 199)}; so orders/3 cannot reach the target LSN 350: "
            "pick an earlier target, a later snapshot, or upload the missing segments",
        ),
        ([(0, 9), (11, 19)], None, 15, "LSNs 10..10 are missing"),
        # a log trimmed after the base
        ([(100, 199)], 50, 150, "gap before this segment: LSNs 51..99 are missing; so orders/3"),
        (
            [(0, 9)],
            None,
            12,
            f"{segment_name(0, 9)}: the changelog ends at LSN 9 but the target is 12: "
            "LSNs 10..12 are missing; so orders/3 cannot reach the target LSN 12",
        ),
        ([(0, 9)], 9, 12, "changelog/orders/3/: no segment holds LSNs 10..12; so orders/3"),
    ],
)
def test_a_range_the_changelog_cannot_serve_is_refused_naming_the_file(
    spans_, base, target, message
):
    refused(segs(*spans_), base, target, message)


@pytest.mark.parametrize("target", [None, 120, 150])
def test_overlapping_segments_are_refused_naming_both_files(target):
    # [0-100] and [50-150] both name LSNs 50..100: which copy is the log? Refused, not
    # read as their union (a replay of both would apply those records twice).
    refused(
        segs((0, 100), (50, 150)),
        None,
        target,
        f"changelog/orders/3/{segment_name(50, 150)}: overlaps {segment_name(0, 100)}: "
        "LSNs 50..100 are in both segments",
    )
    refused(segs((0, 100), (50, 150)), 60, target, "LSNs 50..100 are in both segments")


def test_a_segment_inside_another_is_an_overlap():
    refused(segs((0, 100), (10, 20)), None, None, "LSNs 10..20 are in both segments")


def test_overlaps_outside_the_range_are_not_read_so_not_refused():
    # beyond the target
    assert spans(changelog_range("orders", 3, segs((0, 9), (10, 19), (15, 25)), None, 9)) == [
        (0, 9)
    ]
    # beyond a gap, for latest-available
    found = changelog_range("orders", 3, segs((0, 9), (20, 29), (25, 35)), None, None)
    assert found.target_lsn == 9


lsn_spans = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), max_size=8)
bases = st.one_of(st.none(), st.integers(0, 45))
targets = st.one_of(st.none(), st.integers(0, 50))


@given(lsn_spans, bases, targets)
def test_a_range_is_served_exactly_when_one_segment_holds_each_of_its_lsns(raw, base_lsn, target):
    segments = list({(a, a + n): SegmentLocation("orders", 3, a, a + n) for a, n in raw}.values())
    base = EMPTY_STATE_LSN if base_lsn is None else base_lsn

    def holders(lsn: int) -> list[SegmentLocation]:
        return [s for s in segments if s.first_lsn <= lsn <= s.last_lsn]

    try:
        found = changelog_range("orders", 3, segments, base_lsn, target)
    except CoverageError:
        if target is None:
            # latest-available fails only on an overlap after the base, or a bootstrap
            # without LSN 0
            overlap = any(len(holders(lsn)) > 1 for lsn in range(base + 1, 60))
            assert overlap or (base_lsn is None and not holders(0))
        elif target is not None and target >= base:
            in_range = range(base + 1, target + 1)
            touching = [s for s in segments if s.last_lsn > base and s.first_lsn <= target]
            assert any(not holders(lsn) for lsn in in_range) or any(
                a is not b and a.first_lsn <= b.last_lsn and b.first_lsn <= a.last_lsn
                for a in touching
                for b in touching
            )
        return
    assert found.base_lsn == base
    assert target is None or found.target_lsn == target
    # every LSN of the range in exactly one of the segments read, which are in LSN order,
    # contiguous, and all the segments that hold an LSN of the range
    covered = [lsn for s in found.segments for lsn in range(s.first_lsn, s.last_lsn + 1)]
    assert covered == sorted(set(covered))
    assert all(b.first_lsn == a.last_lsn + 1 for a, b in pairwise(found.segments))
    for lsn in range(base + 1, found.target_lsn + 1):
        assert holders(lsn) and len(holders(lsn)) == 1 and holders(lsn)[0] in found.segments
    assert all(s.last_lsn > base and s.first_lsn <= found.target_lsn for s in found.segments)
    if target is None:  # latest-available: the run cannot go further
        assert not holders(found.target_lsn + 1)
