"""docs/restate.md against the code: its restate.toml snippets are what the tests run, and
each number it ties to a constant (written ``N ... (`CONSTANT`)``) is that constant's value.
No Restate server needed."""

from __future__ import annotations

import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bench.restate_heal import RESTATE_RETRY_INTERVAL_S
from infra.names import GC_SCHEDULE_HOURS
from snapledger import limits
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.core.retention import Kept, RetentionPlan
from snapledger.gc_settings import MIN_ORPHAN_GRACE_HOURS, GcConfig
from snapledger.layouts import restate, restate_keys
from snapledger.limits import MAX_RECORDED_PROBLEMS
from snapledger.models.ledger import LineageId
from snapledger.models.retention_reasons import KeepReason
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services import restate_evictions, restate_pointer, restate_snapshots
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import LayoutCatalog
from tests.restate.fixtures import PREFIX, STREAM, write_restate_snapshot
from tests.restate.harness import RestateHarness
from tests.restate.test_restate_end_to_end import NUM_RETAINED
from tests.support import moto_ledger

DOC = Path(__file__).resolve().parents[2] / "docs" / "restate.md"
#: What the doc's local snippet may show instead of the tests' value: the port is free.
PLACEHOLDERS = {"aws-endpoint-url"}
#: Only for an endpoint that is not AWS.
NOT_ON_AWS = {"aws-endpoint-url", "aws-allow-http"}
#: Restate's own bound on num-retained (its config refuses more).
RESTATE_MAX_NUM_RETAINED = 255

CONSTANTS: dict[str, float] = {
    "SST_TAIL_BYTES": restate.SST_TAIL_BYTES,
    "FILE_READERS": restate_snapshots.FILE_READERS,
    "MAX_REWRITES": restate_pointer.MAX_REWRITES,
    "MAX_KEYS_PER_REQUEST": MAX_KEYS_PER_REQUEST,
    "orphan_grace_hours": GcConfig().orphan_grace_hours,
    "MIN_ORPHAN_GRACE_HOURS": MIN_ORPHAN_GRACE_HOURS,
    "RESTATE_RETRY_INTERVAL_S": RESTATE_RETRY_INTERVAL_S,
    "MAX_MANIFEST_BYTES": limits.MAX_MANIFEST_BYTES,
    "MAX_MANIFEST_FILES": limits.MAX_MANIFEST_FILES,
    "MAX_POINTER_BYTES": limits.MAX_POINTER_BYTES,
    "MAX_UINT64": limits.MAX_UINT64,
    "MAX_LSN": limits.MAX_LSN,
    "MAX_PARTITION": limits.MAX_PARTITION,
    "GC_SCHEDULE_HOURS": GC_SCHEDULE_HOURS,
    "RECOMMENDED_NUM_RETAINED": restate_keys.RECOMMENDED_NUM_RETAINED,
    "MAX_RECORDED_PROBLEMS": MAX_RECORDED_PROBLEMS,
}
_TIED = re.compile(r"(\d[\d,]*(?:\.\d+)?)[^\d(]{0,60}?\(`([A-Za-z_][A-Za-z0-9_]*)`\)")


def doc() -> str:
    return DOC.read_text()


def snippet(name: str) -> dict[str, Any]:
    """The ``[worker.snapshots]`` table of the doc's snippet marked ``restate.toml: name``."""
    found = re.search(rf"<!-- restate.toml: {name} -->\n```toml\n(.*?)```", doc(), re.S)
    assert found, f"docs/restate.md has no restate.toml snippet marked {name!r}"
    return tomllib.loads(found[1])["worker"]["snapshots"]  # type: ignore[no-any-return]


def run_by_tests(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    harness = RestateHarness(tmp_path, **settings)
    return tomllib.loads(harness.config_toml())["worker"]["snapshots"]  # type: ignore[no-any-return]


def test_the_local_snippet_is_what_the_end_to_end_tests_run(tmp_path: Path) -> None:
    shown = snippet("local")
    ran = run_by_tests(tmp_path, num_retained=NUM_RETAINED)
    assert set(shown) == set(ran)
    for key, value in ran.items():
        if key in PLACEHOLDERS:
            assert type(shown[key]) is type(value), key
        else:
            assert shown[key] == value, key


def test_the_aws_snippet_uses_only_keys_the_tests_run_and_no_endpoint(tmp_path: Path) -> None:
    shown = snippet("aws")
    # every key as the harness spells it when it sets it (snapshot-interval-num-records too)
    ran = run_by_tests(tmp_path, num_retained=3, snapshot_interval_num_records=100)
    assert set(shown) <= set(ran) - NOT_ON_AWS
    assert not set(shown) & NOT_ON_AWS
    assert {"destination", "num-retained", "aws-region"} <= set(shown)
    assert shown["destination"].startswith("s3://")
    prefix = shown["destination"].removeprefix("s3://").split("/", 1)[1]
    assert restate.normalize_prefix(prefix) == prefix
    assert 1 <= shown["num-retained"] <= RESTATE_MAX_NUM_RETAINED
    assert shown["snapshot-interval-num-records"] >= 1


def test_each_number_tied_to_a_constant_is_its_value() -> None:
    tied = _TIED.findall(doc())
    named = {name for _, name in tied}
    assert named <= set(CONSTANTS), f"unchecked constants named: {named - set(CONSTANTS)}"
    assert named == set(CONSTANTS), f"constants the doc no longer states: {set(CONSTANTS) - named}"
    for number, name in tied:
        digits = number.replace(",", "")
        stated = float(digits) if "." in digits else int(digits)
        assert stated == CONSTANTS[name], (number, name)


def test_the_doc_states_the_snapshot_id_form_the_parser_accepts() -> None:
    assert restate.SNAPSHOT_ID_PATTERN == r"snap_[0-9A-Za-z]{1,64}"
    assert "`snap_` and 1 to 64 letters or digits" in doc()


@pytest.mark.parametrize("kept", [True, False])
def test_an_eviction_note_names_restates_bound_only_when_the_policy_kept_it(kept: bool) -> None:
    """The run's note points at this doc with the num-retained bound the doc gives."""
    lineage = LineageId(stream=STREAM, partition=0)
    with moto_ledger() as ledger:
        record = _registered(ledger, lineage)
        kept_by = (Kept(record, (KeepReason.HELD,)),) if kept else ()
        plan = RetentionPlan(kept=kept_by, doomed=(), witnesses=(), trim=None)
        (note,) = restate_evictions.record_evictions(ledger, ManualClock(), lineage, [record], plan)
    assert ("docs/restate.md" in note) is kept
    assert (f"up to {RESTATE_MAX_NUM_RETAINED}" in note) is kept
    assert f"at most {RESTATE_MAX_NUM_RETAINED}" in doc()


def _registered(ledger: Any, lineage: LineageId) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        store = FileObjectStore(Path(tmp))
        written = write_restate_snapshot(store, 1000)
        register_manifest(
            written.location.metadata_key,
            ledger=ledger,
            store=store,
            clock=ManualClock(),
            layouts=LayoutCatalog.of({PREFIX: lineage.stream}),
        )
    return ledger.find_snapshot(lineage, written.location.snapshot_id)
