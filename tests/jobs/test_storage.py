"""ObjectStore.list_files: one folder or a whole tree, with sizes, sorted by key."""

from __future__ import annotations

import pytest

from jobs.storage import ObjectStore, StoredFile

pytestmark = pytest.mark.spark


def test_lists_a_folder_or_its_tree_with_sizes(spark, tmp_path) -> None:
    for relative, size in {
        "out/b.parquet": 3,
        "out/a.parquet": 1,
        "out/partition=1/x.parquet": 5,
        "out/partition=1/deeper/y.parquet": 7,
        "other/z.parquet": 2,
    }.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(b"x" * size)
    store = ObjectStore(spark, tmp_path.as_uri())

    assert store.list_files("out/") == [
        StoredFile("out/a.parquet", 1),
        StoredFile("out/b.parquet", 3),
    ]
    assert store.list_files("out/", recursive=True) == [
        StoredFile("out/a.parquet", 1),
        StoredFile("out/b.parquet", 3),
        StoredFile("out/partition=1/deeper/y.parquet", 7),
        StoredFile("out/partition=1/x.parquet", 5),
    ]
    assert store.list_files("missing/") == []
