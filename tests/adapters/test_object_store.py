"""The ObjectStore contract, run against the file:// store and the S3 store (on moto).

The S3 store gets a non-empty prefix and the bucket holds objects beside it, so every
test also checks that keys stay relative to the store's root and nothing leaks out.
Request counts on S3 come from botocore's ``before-send`` event, once per HTTP request.
"""

from __future__ import annotations

import os
import string
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from snapledger.adapters.object_keys import TEMP_PREFIX
from snapledger.adapters.object_store import ACCEPTED_FORMS, open_object_store
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.errors import (
    AccessDeniedError,
    InvalidKeyError,
    InvalidRequestError,
    ManifestTooLargeError,
    NotFoundError,
    ObjectExistsError,
    StaleVersionError,
    StoreUnavailableError,
)
from snapledger.ports import DeleteResult, ObjectStore

BUCKET = "snapledger-test"
S3_PREFIX = "tenant/root"


@dataclass
class Backend:
    """A store under test plus what the test may inspect beside it."""

    name: str
    store: ObjectStore
    requests: Counter[str] = field(default_factory=Counter)  # S3 operation -> HTTP requests
    root: Path | None = None  # the file store's directory


@pytest.fixture(params=["file", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "file":
        # Neighbours the store must never list or touch: a sibling whose name extends
        # the root's and a file beside it.
        (tmp_path / "rootx").mkdir()
        (tmp_path / "rootx" / "a").write_bytes(b"neighbour")
        (tmp_path / "outside").write_bytes(b"neighbour")
        yield Backend("file", FileObjectStore(tmp_path / "root"), root=tmp_path / "root")
        return
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for neighbour in ("outside", f"{S3_PREFIX}x/a", "tenant/a"):
            client.put_object(Bucket=BUCKET, Key=neighbour, Body=b"neighbour")
        backend = Backend("s3", S3ObjectStore(BUCKET, S3_PREFIX, client=client))

        def count(event_name: str, **_: Any) -> None:
            backend.requests[event_name.rsplit(".", 1)[-1]] += 1

        client.meta.events.register("before-send.s3.*", count)
        yield backend


def seed(store: ObjectStore, keys: list[str]) -> None:
    for key in keys:
        store.put(key, key.encode())


def keys_of(store: ObjectStore, prefix: str = "", **kwargs: Any) -> list[str]:
    return [info.key for info in store.list(prefix, **kwargs)]


# -- listing -------------------------------------------------------------------------


def test_list_returns_full_key_order_with_sizes_and_utc_times(backend: Backend) -> None:
    # Given keys whose full-key order differs from a per-directory walk ('-' and '.' sort
    # before '/', which sorts before '0')
    keys = ["a/x", "a-b", "a.b", "a0", "a/y/z", "b", "ab/c", "A"]
    seed(backend.store, keys)

    # When everything is listed
    infos = list(backend.store.list(""))

    # Then keys come in S3's lexicographic order, relative to the root, none from outside
    assert [info.key for info in infos] == sorted(keys)
    # And sizes and UTC-aware modification times come with them
    assert all(info.size == len(info.key) for info in infos)
    assert all(info.last_modified.utcoffset() == timedelta(0) for info in infos)


def test_list_filters_by_prefix_and_starts_after_exclusively(backend: Backend) -> None:
    # Given objects in two folders and a file sharing the first folder's name as prefix
    seed(backend.store, ["s/0/a", "s/0/b", "s/0/c", "s/00/a", "s/1/a"])

    # When listing by a folder, by a partial name, and after a key
    by_folder = keys_of(backend.store, "s/0/")
    by_partial = keys_of(backend.store, "s/0")
    after_existing = keys_of(backend.store, "s/0/", start_after="s/0/a")
    after_absent = keys_of(backend.store, "s/", start_after="s/0/bb")

    # Then prefixes match as strings and start_after excludes the key itself
    assert by_folder == ["s/0/a", "s/0/b", "s/0/c"]
    assert by_partial == ["s/0/a", "s/0/b", "s/0/c", "s/00/a"]
    assert after_existing == ["s/0/b", "s/0/c"]
    assert after_absent == ["s/0/c", "s/00/a", "s/1/a"]
    assert keys_of(backend.store, "nothing/") == []


@pytest.mark.slow
def test_listing_2500_objects_pages_by_1000(backend: Backend) -> None:
    # Given 2,500 objects under one prefix
    keys = [f"segments/{i:05d}.parquet" for i in range(2500)]
    seed(backend.store, keys)
    backend.requests.clear()

    # When all are listed
    listed = keys_of(backend.store, "segments/")

    # Then all come back in order, in exactly three S3 requests (1,000 + 1,000 + 500)
    assert listed == keys
    if backend.name == "s3":
        assert backend.requests == Counter({"ListObjectsV2": 3})

    # And listing after a key resumes right behind it
    assert keys_of(backend.store, "segments/", start_after=keys[1499]) == keys[1500:]

    # And a page is one request of at most 1,000 objects, chained with start_after
    backend.requests.clear()
    first = backend.store.list_page("segments/")
    second = backend.store.list_page("segments/", start_after=first[-1].key)
    last = backend.store.list_page("segments/", start_after=keys[-3], limit=10)
    assert [info.key for info in first + second] == keys[:2000]
    assert [info.key for info in last] == keys[-2:]
    if backend.name == "s3":
        assert backend.requests == Counter({"ListObjectsV2": 3})


@pytest.mark.parametrize("limit", [0, 1001])
def test_list_page_rejects_limits_s3_cannot_serve(backend: Backend, limit: int) -> None:
    # Given a limit outside 1..1000 / When a page is asked for / Then it is refused
    with pytest.raises(InvalidRequestError, match="1 to 1000"):
        backend.store.list_page("", limit=limit)


def test_list_dirs_yields_immediate_sub_prefixes(backend: Backend) -> None:
    # Given objects in nested folders and one object directly under the listed prefix
    seed(backend.store, ["s/0/x", "s/0/deep/y", "s/1/y", "s/10/z", "s/top", "t/q"])

    # When the sub-prefixes are listed / Then only the immediate ones, in order, each once
    assert list(backend.store.list_dirs("s/")) == ["s/0/", "s/1/", "s/10/"]
    assert list(backend.store.list_dirs("s/1")) == ["s/1/", "s/10/"]
    assert list(backend.store.list_dirs("")) == ["s/", "t/"]
    assert list(backend.store.list_dirs("none/")) == []


# -- get / head / put / create -------------------------------------------------------


def test_get_of_a_missing_object_raises_not_found_and_head_returns_none(
    backend: Backend,
) -> None:
    # Given an empty store / When a missing key is read / Then NotFoundError, head None
    with pytest.raises(NotFoundError, match="missing/key"):
        backend.store.get("missing/key")
    assert backend.store.head("missing/key") is None


def test_put_overwrites_and_get_reads_in_one_request(backend: Backend) -> None:
    # Given an object written twice
    backend.store.put("m/_manifest.json", b"first")
    backend.store.put("m/_manifest.json", b"second version")
    backend.requests.clear()

    # When it is read
    data = backend.store.get("m/_manifest.json")

    # Then the last write wins, read with a single GetObject on S3
    assert data == b"second version"
    if backend.name == "s3":
        assert backend.requests == Counter({"GetObject": 1})
    info = backend.store.head("m/_manifest.json")
    assert info is not None
    assert (info.key, info.size) == ("m/_manifest.json", len(b"second version"))


def test_get_tail_reads_the_last_bytes_in_one_ranged_request(backend: Backend) -> None:
    backend.store.put("p/part.parquet", bytes(range(100)))
    with pytest.raises(NotFoundError):
        backend.store.get_tail("p/missing", 8)
    backend.requests.clear()

    tails = [backend.store.get_tail("p/part.parquet", n) for n in (8, 100, 500)]

    assert tails == [bytes(range(92, 100)), bytes(range(100)), bytes(range(100))]
    if backend.name == "s3":
        assert backend.requests == Counter({"GetObject": 3})


def test_replace_overwrites_only_the_version_it_read(backend: Backend) -> None:
    store = backend.store
    assert store.get_versioned("p/latest.json") is None
    store.create("p/latest.json", b"first")
    data, first = store.get_versioned("p/latest.json")
    assert data == b"first"
    store.replace("p/latest.json", b"second", if_match=first)
    data, second = store.get_versioned("p/latest.json")
    assert (data, second != first) == (b"second", True)
    # A writer holding the first version loses, and nothing changes
    with pytest.raises(StaleVersionError, match="no longer version"):
        store.replace("p/latest.json", b"stale", if_match=first)
    with pytest.raises(StaleVersionError):
        store.replace("p/gone.json", b"x", if_match=first)
    assert store.get("p/latest.json") == b"second"


def test_a_bounded_versioned_read_reads_one_byte_past_the_bound_and_tags_the_whole(
    backend: Backend,
) -> None:
    # latest.json is read at most MAX_POINTER_BYTES + 1 bytes (issue 27 row 3); the tag is
    # still the whole object's, so a larger (planted) pointer is replaced conditionally.
    store = backend.store
    store.put("p/latest.json", b"x" * 1000)
    data, tag = store.get_versioned("p/latest.json", max_bytes=10)
    assert data == b"x" * 11
    assert tag == store.get_versioned("p/latest.json")[1]
    assert store.get_versioned("p/latest.json", max_bytes=1000)[0] == b"x" * 1000
    assert store.get_versioned("p/absent.json", max_bytes=10) is None
    store.replace("p/latest.json", b"small", if_match=tag)
    assert store.get("p/latest.json") == b"small"


def test_concurrent_replaces_of_one_version_have_one_winner(backend: Backend) -> None:
    store = backend.store
    store.create("p/latest.json", b"base")
    _, tag = store.get_versioned("p/latest.json")

    def attempt(n: int) -> bool:
        try:
            store.replace("p/latest.json", f"writer-{n}".encode(), if_match=tag)
        except StaleVersionError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(attempt, range(8)))
    assert won.count(True) == 1
    assert store.get("p/latest.json") == f"writer-{won.index(True)}".encode()


def test_get_enforces_max_bytes_before_reading(backend: Backend) -> None:
    # Given a 100-byte object
    backend.store.put("big", b"x" * 100)
    backend.requests.clear()

    # When read with limits at and below its size
    at_limit = backend.store.get("big", max_bytes=100)
    with pytest.raises(ManifestTooLargeError, match="100 bytes, over the 99-byte limit"):
        backend.store.get("big", max_bytes=99)

    # Then the limit is inclusive, and each read is one GetObject on S3
    assert at_limit == b"x" * 100
    if backend.name == "s3":
        assert backend.requests == Counter({"GetObject": 2})


def test_create_twice_keeps_the_first_content(backend: Backend) -> None:
    # Given an object created once
    backend.store.create("s/0/_manifest.json", b"first")

    # When it is created again
    with pytest.raises(ObjectExistsError, match="already exists"):
        backend.store.create("s/0/_manifest.json", b"second")

    # Then the first content is still there
    assert backend.store.get("s/0/_manifest.json") == b"first"


def test_concurrent_creates_from_8_threads_have_one_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 8 threads released together onto the same keys, round after round, with the
    # calls that publish a file slowed down, so that a create which checks for the key
    # and then writes it would let several threads through the gap
    for name in ("link", "replace", "rename"):
        monkeypatch.setattr(os, name, _slowed(getattr(os, name)))
    store = FileObjectStore(tmp_path)
    threads = 8
    barrier = threading.Barrier(threads)

    def contend(writer: int) -> list[str]:
        outcomes = []
        for round_ in range(50):
            barrier.wait()
            try:
                store.create(f"race/{round_}", f"writer-{writer}".encode() * 1000)
                outcomes.append(f"won {round_}")
            except ObjectExistsError:
                outcomes.append(f"lost {round_}")
        return outcomes

    # When they all try to create each key
    with ThreadPoolExecutor(threads) as pool:
        results = [outcome for run in pool.map(contend, range(threads)) for outcome in run]

    # Then every key has exactly one winner, whose complete content is what is stored
    wins = Counter(outcome.split()[1] for outcome in results if outcome.startswith("won"))
    assert wins == Counter({str(round_): 1 for round_ in range(50)})
    for round_ in range(50):
        data = store.get(f"race/{round_}")
        assert data in {f"writer-{w}".encode() * 1000 for w in range(threads)}
    assert not list(tmp_path.rglob(f"{TEMP_PREFIX}*"))


def _slowed(call: Any) -> Any:
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.001)
        return call(*args, **kwargs)

    return slow


def test_concurrent_creates_from_processes_have_one_winner(tmp_path: Path) -> None:
    # Given 4 processes and 4 create attempts per key, queued next to each other so the
    # processes tend to take the same key at the same time
    store = FileObjectStore(tmp_path)
    keys = [f"race/{i}" for i in range(50)]
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(store.create, key, b"x") for key in keys for _ in range(4)]

        # When they have all run
        outcomes = [(future.exception() is None) for future in futures]

    # Then exactly one create per key succeeded and the others found it existing
    assert sum(outcomes) == len(keys)
    assert all(
        isinstance(future.exception(), ObjectExistsError)
        for future, won in zip(futures, outcomes, strict=True)
        if not won
    )


# -- delete --------------------------------------------------------------------------


@pytest.mark.slow
def test_delete_many_deletes_in_batches_of_1000(backend: Backend) -> None:
    # Given 2,500 objects and 3 keys that do not exist
    keys = [f"snap/{i // 100:02d}/part-{i:05d}" for i in range(2500)]
    seed(backend.store, keys)
    backend.store.put("keep/me", b"kept")
    absent = ["snap/absent-1", "snap/99/absent-2", "never/was"]
    backend.requests.clear()

    # When all of them are deleted
    result = backend.store.delete_many(keys + absent)

    # Then everything counts as deleted, in three DeleteObjects requests on S3
    assert result == DeleteResult(deleted=tuple(keys + absent), failed=())
    if backend.name == "s3":
        assert backend.requests == Counter({"DeleteObjects": 3})
    assert keys_of(backend.store) == ["keep/me"]
    # And the file store leaves no empty folders behind (but keeps its root)
    if backend.root is not None:
        assert sorted(p.name for p in backend.root.iterdir()) == ["keep"]


def test_delete_many_prunes_only_empty_folders_on_the_file_store(tmp_path: Path) -> None:
    # Given nested objects
    store = FileObjectStore(tmp_path / "root")
    seed(store, ["a/b/c", "a/x"])

    # When the deepest one is deleted
    store.delete_many(["a/b/c"])

    # Then its emptied folder goes but the non-empty parent stays
    assert (tmp_path / "root" / "a").is_dir()
    assert not (tmp_path / "root" / "a" / "b").exists()

    # And deleting the last object empties everything except the root
    store.delete_many(["a/x"])
    assert (tmp_path / "root").is_dir()
    assert list((tmp_path / "root").iterdir()) == []


def test_delete_many_reports_per_key_failures_on_s3() -> None:
    # Given S3 answering a DeleteObjects with per-key errors (moto never does)
    client = boto3.client("s3", region_name="us-east-1")
    store = S3ObjectStore(BUCKET, "pre/fix", client=client)
    with Stubber(client) as stub:
        stub.add_response(
            "delete_objects",
            {
                "Errors": [
                    {"Key": "pre/fix/b", "Code": "AccessDenied", "Message": "Access Denied"},
                    {"Key": "pre/fix/c", "Code": "InternalError", "Message": "try again"},
                ]
            },
            {
                "Bucket": BUCKET,
                "Delete": {
                    "Objects": [{"Key": "pre/fix/a"}, {"Key": "pre/fix/b"}, {"Key": "pre/fix/c"}],
                    "Quiet": True,
                },
            },
        )

        # When three keys are deleted
        result = store.delete_many(["a", "b", "c"])

        # Then each failed key is reported with its reason, relative to the prefix; a
        # denial names the IAM action and the object, as an AccessDeniedError says it
        stub.assert_no_pending_responses()
    assert result.deleted == ("a",)
    reasons = dict(result.failed)
    denied = AccessDeniedError("s3:DeleteObject", f"arn:aws:s3:::{BUCKET}/pre/fix/b")
    assert reasons["b"] == str(denied)
    assert reasons["c"] == "InternalError: try again"


def test_delete_many_reports_per_key_failures_on_the_file_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store where one file cannot be removed (faked: tests may run as root)
    store = FileObjectStore(tmp_path)
    seed(store, ["a", "b", "c"])
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path).name == "b":
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)

    # When all three are deleted
    result = store.delete_many(["a", "b", "c"])

    # Then the other two are gone and the failure names the key and the reason
    assert result.deleted == ("a", "c")
    assert result.failed == (("b", "PermissionError: Permission denied"),)
    monkeypatch.undo()
    assert keys_of(store) == ["b"]


# -- key rules -----------------------------------------------------------------------

ESCAPING_KEYS = [
    "",
    "../outside",
    "a/../../outside",
    "/etc/passwd",
    "a\\..\\outside",
    "a//b",
    "a/./b",
    "a/",
    "..",
    f"a/{TEMP_PREFIX}x",
]


@pytest.mark.parametrize("key", ESCAPING_KEYS)
def test_keys_that_could_escape_the_root_are_rejected(backend: Backend, key: str) -> None:
    # Given a key that is absolute, climbs out, or is otherwise not a plain relative path
    store = backend.store

    # When any operation uses it / Then InvalidKeyError, and nothing is written anywhere
    for operation in (
        lambda: store.get(key),
        lambda: store.head(key),
        lambda: store.put(key, b"x"),
        lambda: store.create(key, b"x"),
        lambda: store.delete_many(["fine", key]),
    ):
        with pytest.raises(InvalidKeyError):
            operation()
    if backend.root is not None:
        assert not backend.root.exists()
        assert (backend.root.parent / "outside").read_bytes() == b"neighbour"
    assert keys_of(store) == []


@pytest.mark.parametrize("prefix", ["../", "/abs/", "a//", "a/../", "a\\b"])
def test_listing_prefixes_that_could_escape_are_rejected(backend: Backend, prefix: str) -> None:
    # Given a prefix that climbs out or is absolute / When listed / Then InvalidKeyError
    with pytest.raises(InvalidKeyError, match="listing prefix"):
        list(backend.store.list(prefix))
    with pytest.raises(InvalidKeyError, match="listing prefix"):
        list(backend.store.list_dirs(prefix))


def test_file_store_ignores_in_progress_temp_files(tmp_path: Path) -> None:
    # Given a half-written temp file beside an object, and a folder holding only one
    store = FileObjectStore(tmp_path)
    store.put("s/0/a", b"a")
    (tmp_path / "s" / "0" / f"{TEMP_PREFIX}123").write_bytes(b"partial")
    (tmp_path / "s" / "1").mkdir()
    (tmp_path / "s" / "1" / f"{TEMP_PREFIX}456").write_bytes(b"partial")

    # When listed / Then neither the temp files nor the folder holding only one show up
    assert keys_of(store) == ["s/0/a"]
    assert list(store.list_dirs("s/")) == ["s/0/"]


def test_file_store_refuses_a_key_that_is_also_a_folder(tmp_path: Path) -> None:
    # Given 'a/b' stored, so 'a' is a folder on disk
    store = FileObjectStore(tmp_path)
    store.put("a/b", b"x")
    store.put("c", b"x")

    # When 'a' is written as an object, or 'c/d' under the object 'c'
    # Then the clash is named instead of an OSError, and nothing changes
    for write in (store.put, store.create):
        with pytest.raises(InvalidKeyError, match="clashes"):
            write("a", b"y")
        with pytest.raises(InvalidKeyError, match="clashes"):
            write("c/d", b"y")
    assert keys_of(store) == ["a/b", "c"]


_SEGMENT = st.text(alphabet="ab-._0/", min_size=1, max_size=4).filter(
    lambda segment: "/" not in segment and segment not in (".", "..")
)


@settings(max_examples=75, deadline=None)
@given(
    paths=st.sets(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), max_size=12),
    after=st.text(alphabet="ab-._0/", max_size=6),
)
def test_file_store_lists_in_s3_order_for_any_keys(paths: set[str], after: str) -> None:
    # Given any set of keys made of characters that sort around '/' (dropping keys that
    # are also folders of other keys, which a file system cannot hold)
    keys = {key for key in paths if not any(other.startswith(key + "/") for other in paths)}
    with tempfile.TemporaryDirectory() as directory:
        store = FileObjectStore(Path(directory))
        seed(store, sorted(keys))

        # When listed from the start and after an arbitrary string
        # Then the order is plain string order, exactly as S3 returns it
        assert keys_of(store) == sorted(keys)
        assert keys_of(store, start_after=after) == sorted(k for k in keys if k > after)


# -- S3 error translation ------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "code", "status", "expected"),
    [
        ("get_object", "SlowDown", 503, StoreUnavailableError),
        ("get_object", "InternalError", 500, StoreUnavailableError),
        ("get_object", "NoSuchKey", 404, NotFoundError),
        ("get_object", "NoSuchBucket", 404, StoreUnavailableError),
        ("get_object", "AccessDenied", 403, StoreUnavailableError),
        ("put_object", "PreconditionFailed", 412, ObjectExistsError),
        ("put_object", "ConditionalRequestConflict", 409, ObjectExistsError),
        ("put_object", "SlowDown", 503, StoreUnavailableError),
    ],
)
def test_s3_errors_become_snapledger_errors(
    operation: str, code: str, status: int, expected: type[Exception]
) -> None:
    # Given S3 answering with an error (after botocore's own retries)
    client = boto3.client("s3", region_name="us-east-1")
    store = S3ObjectStore(BUCKET, client=client)
    with Stubber(client) as stub:
        stub.add_client_error(operation, service_error_code=code, http_status_code=status)

        # When the store makes the call
        with pytest.raises(expected) as raised:
            if operation == "get_object":
                store.get("k")
            else:
                store.create("k", b"x")

    # Then the snapledger error carries the botocore one as its cause, and says what to do
    assert isinstance(raised.value.__cause__, ClientError)
    if expected is StoreUnavailableError:
        assert any(hint in str(raised.value) for hint in ("try again", "check", "grant"))


# -- factory -------------------------------------------------------------------------


def test_open_object_store_parses_the_accepted_forms(tmp_path: Path) -> None:
    # Given each accepted URI form / When opened / Then the right store at the right root
    client = boto3.client("s3", region_name="us-east-1")
    s3 = open_object_store("s3://my-bucket/some/prefix/", s3_client=client)
    bare = open_object_store("s3://my-bucket", s3_client=client)
    by_uri = open_object_store(tmp_path.as_uri())
    by_path = open_object_store(str(tmp_path / "with space"))

    assert isinstance(s3, S3ObjectStore)
    assert s3.uri == "s3://my-bucket/some/prefix"
    assert bare.uri == "s3://my-bucket"
    assert isinstance(by_uri, FileObjectStore)
    assert by_uri.root == tmp_path.resolve()
    assert isinstance(by_path, FileObjectStore)
    # And a file store's URI opens the same directory again (spaces percent-encoded)
    reopened = open_object_store(by_path.uri)
    assert isinstance(reopened, FileObjectStore)
    assert reopened.root == by_path.root


@pytest.mark.parametrize(
    "uri",
    [
        "relative/dir",
        "http://example.com/x",
        "s3://",
        "s3://Bad_Bucket/x",
        "file://relative/dir",
        "",
        string.whitespace,
    ],
)
def test_open_object_store_names_the_accepted_forms_on_error(uri: str) -> None:
    # Given an unsupported URI / When opened / Then the error lists what is accepted
    with pytest.raises(InvalidRequestError) as raised:
        open_object_store(uri)
    assert ACCEPTED_FORMS in str(raised.value)
    assert repr(uri) in str(raised.value)


def test_s3_returns_the_sha256_it_stored_and_none_for_an_algorithm_it_did_not() -> None:
    import hashlib

    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        store = S3ObjectStore(BUCKET, S3_PREFIX, client=client)
        client.put_object(
            Bucket=BUCKET, Key=f"{S3_PREFIX}/a", Body=b"data", ChecksumAlgorithm="SHA256"
        )
        assert store.stored_checksum("a", "sha256") == hashlib.sha256(b"data").digest()
        assert store.stored_checksum("a", "md5") is None
        client.put_object(Bucket=BUCKET, Key=f"{S3_PREFIX}/b", Body=b"data")
        assert store.stored_checksum("b", "sha256") is None


def test_the_file_store_computes_each_algorithm_from_the_bytes(tmp_path: Path) -> None:
    from snapledger.core.checksums import compute

    store = FileObjectStore(tmp_path)
    store.put("a", b"123456789")
    for algorithm in ("crc64nvme", "crc32c", "sha256", "md5"):
        assert store.stored_checksum("a", algorithm) == compute(algorithm, b"123456789").digest
