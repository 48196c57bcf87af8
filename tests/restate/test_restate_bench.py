"""The Restate benchmark (bench/bench_restate.py, bench/restate_heal.py) runs end to end at
its smallest size, so it cannot rot. Request counts are exact, so registration's are
asserted at its floor; no time is asserted."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.bench_restate import DUE, FILES, MIN_COUNT, gc_floor, registration_floor, requests
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.ports import MAX_KEYS_PER_REQUEST
from tests.support import moto_ledger


def test_the_floors_come_from_the_api_limits() -> None:
    # one metadata GET, a listing per 1,000 objects (SSTs + metadata.json), a tail per SST
    assert registration_floor(10) == 1 + 1 + 10
    assert registration_floor(MAX_KEYS_PER_REQUEST) == 1 + 2 + MAX_KEYS_PER_REQUEST
    # 100 partitions, 10 due of 3 objects each: 3,000 keys in 3 batch deletes; a listing,
    # a latest.json GET and conditional PUT each; heal's metadata GET and a tail per SST
    batch, heal = gc_floor(100, DUE, MIN_COUNT, FILES)
    assert batch == 3 + 100 + 200
    assert heal == 100 * (1 + FILES)


def test_the_request_benchmark_runs_at_its_smallest_size(capsys) -> None:
    with moto_ledger() as ledger, tempfile.TemporaryDirectory() as tmp:
        figures = requests(
            ledger, FileObjectStore(Path(tmp)), ledger.client, sst_sizes=(10,), expired_sizes=(10,)
        )
    (registered,) = figures["registration_table"]
    # registration reads no data: exactly its floor, each SST's tail once
    assert registered["s3_requests"] == registered["floor"] == registration_floor(10)
    assert registered["requests"] == {"get_metadata": 1, "list": 1, "get_tail": 10}
    assert registered["ddb_requests"] == 2
    (collected,) = figures["gc_table"]
    assert (collected["expired"], collected["partitions"]) == (10, 1)
    made = collected["requests"]
    assert made["put_if_match"] == 1  # retained_snapshots pruned by one compare-and-swap
    assert made["get_tail"] == FILES  # heal's check of the latest: each SST's tail
    assert "put" not in made  # nothing written but latest.json, and that only by CAS
    assert figures["gc_s3_requests_vs_floor"] == collected["ratio"]
    assert "registration: requests per snapshot" in capsys.readouterr().out


@pytest.mark.restate
@pytest.mark.slow
@pytest.mark.ddblocal
def test_the_heal_benchmark_runs_one_trial_with_the_real_server(tmp_path, dynamodb_local) -> None:
    from bench.restate_heal import measure

    figures = measure(tmp_path, trials=1, dynamodb_endpoint=dynamodb_local.endpoint_url)
    (trial,) = figures["heal_trials"]
    assert set(trial) == {"healthy_restore_s", "heal_to_serving_s"}
    assert figures["heal_to_serving_vs_floor"] > 0
