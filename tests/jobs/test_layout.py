"""The names only the job writes or reads (jobs/layout.py); the rest is snapledger.layout."""

from __future__ import annotations

from jobs import layout as job_layout
from snapledger import layout


def test_the_changelog_folder_and_a_segment_name_make_the_segment_key() -> None:
    assert job_layout.changelog_dir("s", 3) + layout.segment_name(5, 17) == (
        layout.segment_key("s", 3, 5, 17)
    )


def test_a_snapshot_is_located_from_its_prefix_with_or_without_the_slash() -> None:
    prefix = layout.snapshot_prefix("s", 3, 42, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y")
    for given in (prefix, prefix.rstrip("/")):
        found = job_layout.snapshot_location(given)
        assert found is not None
        assert (found.stream, found.partition, found.lsn) == ("s", 3, 42)
    assert job_layout.snapshot_location("snapshots/s/3/not-a-snapshot/") is None


def test_streams_and_job_ids_are_checked_against_the_layouts_alphabet() -> None:
    assert job_layout.is_valid_stream("orders-ktable.v2")
    assert not job_layout.is_valid_stream("-orders") and not job_layout.is_valid_stream("a/b")
    assert job_layout.is_valid_job_id("restore-0123abcd")
    assert not job_layout.is_valid_job_id("x" * 129)
