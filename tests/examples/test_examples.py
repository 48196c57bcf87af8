"""examples/producer.py and examples/consumer.py, run in-process, and docs/producers.md
checked against the code: its manifest validates and every quoted answer is today's."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from examples import consumer, producer
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.client import Snapledger, SnapshotFormatError, SnapshotReader
from snapledger.clock import ManualClock
from snapledger.layout import restore_prefix
from snapledger.local.handlers import invoke
from snapledger.models.manifest import ManifestV1
from snapledger.runtime import runtime_override
from tests.examples import mistakes
from tests.functions.support import POWERTOOLS_ENV, FakeLambdaContext, object_created_event
from tests.support import make_runtime, moto_ledger

DOC = Path(__file__).resolve().parents[2] / "docs" / "producers.md"
BUCKET = "snapledger-examples"


class InProcess:
    """The functions' handlers, called as Lambda would call them."""

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@pytest.fixture
def powertools_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def ledger():
    with moto_ledger() as moto:
        yield moto


def printed(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The ``name=value`` lines an example printed."""
    out = capsys.readouterr().out
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line.split(" ")[0])


# -- the examples on a file:// root ------------------------------------------------------


def test_producer_then_consumer_on_a_file_root(tmp_path, capsys):
    root = f"file://{tmp_path}/root"
    args = ["--root", root, "--stream", "orders", "--partition", "3"]
    assert producer.main([*args, "--lsn", "2499", "--keys", "1000"]) == 0
    written = printed(capsys)
    assert written["prefix"].startswith("snapshots/orders/3/00000000000000002499-")
    assert written["manifest_key"] == written["prefix"] + "_manifest.json"
    assert written["snapshot_id"] in written["prefix"]

    assert consumer.main(["--root", root, "--prefix", written["prefix"]]) == 0
    out = capsys.readouterr().out
    assert "rows=1000\n" in out and "lsn=2499\n" in out
    assert "seek orders-3 to 2500\n" in out

    loaded = consumer.load_snapshot(root, written["manifest_key"])
    assert loaded.state == producer.build_state(1000, 2499)
    assert loaded.state["k00499"] == b"v2499"  # each key holds its last put
    assert loaded.offsets == {"orders-3": 2500}


def test_an_opaque_checkpoint_is_written_and_downloaded_not_loaded(tmp_path, capsys):
    root = f"file://{tmp_path}/root"
    args = ["--root", root, "--stream", "orders", "--partition", "3", "--opaque"]
    assert producer.main(args) == 0
    written = printed(capsys)
    assert written["format"].startswith("opaque")
    opened = SnapshotReader(root).open(written["prefix"])
    assert sorted(f.path for f in opened.files) == ["000042.sst", "CURRENT", "MANIFEST-000001"]
    folder = opened.download(tmp_path / "restored")
    expected = producer.make_fake_checkpoint(tmp_path / "expected")
    for name in ("000042.sst", "CURRENT", "MANIFEST-000001"):
        assert (folder / name).read_bytes() == (expected / name).read_bytes()
    with pytest.raises(SnapshotFormatError, match="opaque"):
        consumer.load_snapshot(root, written["prefix"])


def test_the_consumer_reads_a_restore_output(tmp_path, capsys):
    # A restore's folder as the job writes it (docs/jobs.md): the state's Parquet files,
    # then _restore.json. Here the files are a written snapshot's, copied.
    root = tmp_path / "root"
    written = producer.write_state(f"file://{root}", "orders", 3, lsn=999, epoch=1, keys=100)
    job_id = "restore-example-1"
    target = root / restore_prefix(job_id, 3)
    target.mkdir(parents=True)
    source = root / written.prefix
    for file in written.files:
        (target / file.path).write_bytes((source / file.path).read_bytes())
    descriptor = {
        "format_version": 1,
        "job_id": job_id,
        "stream": "orders",
        "partition": 3,
        "lsn": 999,
        "base": {"snapshot_id": written.snapshot_id, "lsn": 999, "offsets": {"orders-3": 1000}},
        "changelog_from_lsn": None,
        "changelog_to_lsn": None,
        "producer": {"name": "snapledger-jobs"},
        "files": [f.model_dump(exclude_none=True) for f in written.files],
        "row_count": written.row_count,
    }
    (target / "_restore.json").write_text(json.dumps(descriptor))

    loaded = consumer.load_restore(f"file://{root}", job_id, 3)
    assert loaded.state == producer.build_state(100, 999)
    assert loaded.offsets == {"orders-3": 1000}  # no changelog after the base

    argv = ["--root", f"file://{root}", "--restore-job", job_id, "--partition", "3"]
    assert consumer.main(argv) == 0
    assert "seek orders-3 to 1000" in capsys.readouterr().out


# -- the examples on S3 (moto), registered by the register function ----------------------


@pytest.fixture
def deployment(ledger, powertools_env, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        runtime = make_runtime(ledger, S3ObjectStore(BUCKET, "", client=s3), ManualClock())
        with runtime_override(runtime):
            yield s3


def register(key: str) -> dict[str, Any]:
    handler = importlib.import_module("functions.register").handler
    event = object_created_event(key)
    event["detail"]["bucket"]["name"] = BUCKET
    return handler(event, FakeLambdaContext())  # type: ignore[no-any-return]


def test_on_s3_the_consumer_finds_the_latest_and_reads_what_was_written(deployment, capsys):
    root = f"s3://{BUCKET}"
    args = ["--root", root, "--stream", "orders", "--partition", "3"]
    keys = {}
    for lsn in (4999, 2999):  # the newer first: a late older snapshot must not win
        assert producer.main([*args, "--lsn", str(lsn), "--epoch", "2"]) == 0
        keys[lsn] = printed(capsys)
        assert register(keys[lsn]["manifest_key"])["ok"] is True

    registry = Snapledger(InProcess())
    head = registry.latest("orders", 3)["head"]
    assert (head["latest_snapshot_id"], head["latest_lsn"]) == (keys[4999]["snapshot_id"], 4999)
    key = consumer.latest_manifest_key(registry, "orders", 3)
    assert key == keys[4999]["manifest_key"]

    assert consumer.main(args, registry=registry) == 0
    out = capsys.readouterr().out
    assert f"prefix={keys[4999]['prefix']}\n" in out
    assert "rows=1000\n" in out and "seek orders-3 to 5000\n" in out

    loaded = consumer.load_snapshot(root, key, s3_client=deployment)
    assert loaded.lsn == 4999
    assert loaded.state == producer.build_state(1000, 4999)
    assert loaded.offsets == {"orders-3": 5000}
    record = registry.snapshot("orders", 3, keys[4999]["snapshot_id"])["snapshot"]
    assert (record["offsets"], record["row_count"], record["epoch"]) == (
        {"orders-3": 5000},
        1000,
        2,
    )


# -- docs/producers.md against the code ------------------------------------------------


def test_the_manifest_in_the_doc_is_a_valid_manifest_v1():
    text = DOC.read_text()
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1
    manifest = ManifestV1.model_validate(json.loads(blocks[0]))
    assert (manifest.format, manifest.offsets) == ("kv-parquet", {"orders-3": 5000})
    assert manifest.total_rows == 1000


def _doc_row(name: str) -> tuple[str, str | None]:
    """The outcome cell and the quoted answer (None: no quote) of the doc's row ``name``."""
    for line in DOC.read_text().splitlines():
        if line.startswith(f"| **{name}**"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            quoted = re.fullmatch(r"`(.*)`", cells[2])
            return cells[1], quoted.group(1) if quoted else None
    raise AssertionError(f"docs/producers.md has no row for {name!r}")


def _stable(text: str) -> str:
    """``text`` with what varies per run (ids, digests, sizes) replaced."""
    text = re.sub(r"[0-9A-HJKMNP-TV-Z]{26}", "<ULID>", text)
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:<digest>", text)
    text = re.sub(r"crc32c is [0-9a-f]{8}, the stored object's is [0-9a-f]{8}", "crc32c <x>", text)
    return re.sub(r"\b\d+ bytes in the store but the manifest says \d+", "<sizes>", text)


@pytest.mark.parametrize("name", list(mistakes.MISTAKES))
def test_each_mistake_gets_the_answer_the_doc_quotes(name, ledger, tmp_path):
    _, outcome, fragment = mistakes.MISTAKES[name]
    result = mistakes.run(ledger, tmp_path / "root", name)
    assert result.outcome.value == outcome
    doc_outcome, quoted = _doc_row(name)
    assert doc_outcome == f"`{outcome}`"
    if fragment is None:
        assert result.reason is None and quoted is None
        return
    assert fragment in result.reason
    assert quoted is not None and _stable(result.reason) == _stable(quoted)


def test_a_manifest_before_its_data_stays_rejected_once_the_data_arrives(ledger, tmp_path):
    scene = mistakes.Scene(ledger, tmp_path / "root")
    written = scene.writer.write(lsn=100, epoch=1, data=mistakes.ROWS)
    path = scene.data_path(written)
    data = path.read_bytes()
    path.unlink()
    first = scene.register(written.manifest_key)
    assert first.outcome.value == "rejected" and "is not in the store" in first.reason
    path.write_bytes(data)  # the data file lands after the manifest
    again = scene.register(written.manifest_key)
    assert again.outcome.value == "duplicate" and again.reason == first.reason
    assert _doc_row("manifest before data")[0] == "`rejected`"


def test_an_opaque_restore_gets_the_answers_the_doc_quotes(ledger, tmp_path, powertools_env):
    answer = mistakes.opaque_restore_refusal(ledger, tmp_path / "launch")
    assert answer["error"] == "invalid_request"
    _, quoted = _doc_row("opaque restore")
    assert quoted is not None and _stable(answer["message"]) == _stable(quoted)

    message = mistakes.opaque_base_message(tmp_path / "job")
    _, quoted = _doc_row("opaque base")
    assert quoted is not None and _stable(message) == _stable(quoted)
