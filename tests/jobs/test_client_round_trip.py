"""The client library around the data plane: SnapshotWriter → a restore job from that
snapshot plus the changelog tail → SnapshotReader of the restore equals the replay; an
opaque snapshot written by the client is refused as the job's base."""

from __future__ import annotations

import pytest
from jobs_support import Record, oracle, write_segment

from jobs.args import JobArgs
from jobs.errors import SnapshotError
from jobs.job import run_job
from snapledger.client import SnapshotReader, SnapshotWriter

pytestmark = pytest.mark.spark


def _restore(spark, root, job_id: str, base_prefix: str, target: int):
    return run_job(
        spark,
        JobArgs(
            kind="restore",
            root=root.as_uri(),
            stream="orders",
            partitions=(3,),
            job_id=job_id,
            target_lsn=target,
            bases={3: base_prefix},
        ),
    )


@pytest.mark.parametrize("checksum", ["crc32c", "crc64nvme", "sha256"])
def test_a_client_snapshot_restores_and_reads_back_as_the_replay(spark, tmp_path, checksum):
    records = [
        Record(lsn=n, key=f"k{n % 40:03d}", value=f"v{n}".encode(), op="put") for n in range(200)
    ]
    records += [Record(lsn=200 + n, key=f"k{n:03d}", value=None, op="delete") for n in range(5)]
    write_segment(tmp_path, "orders", 3, 0, 99, records[:100])
    write_segment(tmp_path, "orders", 3, 100, 204, records[100:])
    state_at_99 = oracle(records, 99)
    writer = SnapshotWriter(tmp_path.as_uri(), "orders", 3, checksum=checksum, target_file_rows=16)
    written = writer.write(
        lsn=99,
        epoch=1,
        data=[(key, value) for key, (value, _) in state_at_99.items()],
        offsets={"orders-3": 100},
    )
    assert len(written.files) > 1  # several parts, each with its checksum verified

    _restore(spark, tmp_path, "client-restore", written.prefix, 204)

    opened = SnapshotReader(tmp_path.as_uri()).open_restore("client-restore", 3)
    table = opened.to_arrow()
    expected = oracle(
        records, 204, base={k: (v, 99) for k, (v, _) in state_at_99.items()}, after=99
    )
    got = {row["key"]: (row["value"], row["lsn"]) for row in table.to_pylist()}
    assert got == expected
    assert opened.lsn == 204
    assert opened.descriptor.base is not None
    assert opened.descriptor.base.offsets == {"orders-3": 100}


def test_an_opaque_client_snapshot_is_refused_as_a_base(spark, tmp_path):
    write_segment(
        tmp_path,
        "orders",
        3,
        0,
        9,
        [Record(lsn=n, key="k", value=b"v", op="put") for n in range(10)],
    )
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "CURRENT").write_bytes(b"MANIFEST-000001\n")
    written = SnapshotWriter(tmp_path.as_uri(), "orders", 3).write_files(
        lsn=4, epoch=1, paths_or_dir=checkpoint
    )
    with pytest.raises(SnapshotError, match="format is 'opaque'"):
        _restore(spark, tmp_path, "opaque-restore", written.prefix, 9)
    assert not list(tmp_path.glob("restores/**/_restore.json"))
