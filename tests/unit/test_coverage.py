"""Changelog coverage: (base, target] complete with no gap, or a message saying what lacks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snapledger.core.coverage import CoverageError, check_covers, contiguous_end
from snapledger.layout import SegmentLocation


def segs(*spans):
    return [SegmentLocation("orders", 3, a, b) for a, b in spans]


def test_contiguous_segments_cover_from_the_base():
    assert check_covers(segs((0, 99), (100, 199), (200, 299)), "orders/3", 150, 250) == 250


def test_target_defaults_to_the_end_of_the_contiguous_changelog():
    assert check_covers(segs((0, 99), (100, 199), (300, 399)), "orders/3", 50, None) == 199


def test_a_gap_is_refused_naming_the_missing_lsns():
    with pytest.raises(CoverageError, match=r"only up to LSN 199.*LSNs 200\.\.350 are missing"):
        check_covers(segs((0, 99), (100, 199), (300, 399)), "orders/3", 50, 350)


def test_a_trimmed_log_that_starts_after_the_base_is_refused():
    with pytest.raises(CoverageError, match="complete from LSN 51 nowhere"):
        check_covers(segs((100, 199)), "orders/3", 50, 150)


def test_bootstrap_needs_the_changelog_from_lsn_0():
    assert check_covers(segs((0, 19), (20, 29)), "orders/3", None, None) == 29
    with pytest.raises(CoverageError, match="has no changelog segments"):
        check_covers([], "orders/3", None, None)
    with pytest.raises(CoverageError, match="starts at LSN 10, not 0"):
        check_covers(segs((10, 19)), "orders/3", None, None)
    with pytest.raises(CoverageError, match="complete from LSN 0 nowhere"):
        check_covers(segs((10, 19)), "orders/3", None, 15)


def test_target_at_the_base_needs_no_tail_and_below_it_is_refused():
    assert check_covers([], "orders/3", 100, 100) == 100
    assert check_covers(segs((0, 100)), "orders/3", 100, None) == 100
    with pytest.raises(CoverageError, match="below the base snapshot's LSN 100"):
        check_covers(segs((0, 200)), "orders/3", 100, 50)


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=12), st.integers(-1, 70))
def test_contiguous_end_matches_a_set_model(spans, after):
    segments = segs(*[(a, a + n) for a, n in spans])
    covered = {lsn for s in segments for lsn in range(s.first_lsn, s.last_lsn + 1)}
    end = contiguous_end(segments, after)
    if end is None:
        assert after + 1 not in covered
    else:
        assert all(lsn in covered for lsn in range(after + 1, end + 1))
        assert end + 1 not in covered
