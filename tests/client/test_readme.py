"""README's client example runs as written (on moto S3), and its control example sends the
payloads the console documents."""

from __future__ import annotations

import re
from pathlib import Path

import boto3
from moto import mock_aws

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    section = README.read_text().split("**From Python: the client library**", 1)[1]
    return re.findall(r"```python\n(.*?)```", section.split("**A long-running", 1)[0], re.S)


def test_the_readme_writer_and_reader_example_runs(tmp_path, monkeypatch) -> None:
    writer_block, _ = _python_blocks()
    checkpoint = tmp_path / "rocksdb-checkpoint"
    checkpoint.mkdir()
    (checkpoint / "CURRENT").write_bytes(b"MANIFEST-000001\n")
    monkeypatch.chdir(tmp_path)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="my-bucket")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        scope: dict[str, object] = {}
        exec(compile(writer_block, "README.md", "exec"), scope)
        written, checkpoint_written = scope["written"], scope["checkpoint"]
        assert (written.lsn, written.format) == (18_213, "kv-parquet")
        assert checkpoint_written.format == "opaque"


def test_the_readme_control_example_names_real_methods() -> None:
    from snapledger.client import Snapledger

    _, control_block = _python_blocks()
    for method in re.findall(r"registry\.(\w+)\(", control_block):
        assert callable(getattr(Snapledger, method)), method
    assert "open_restore" in control_block
