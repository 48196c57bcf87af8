"""What the local Restate cluster (restate_cluster.py) runs with: the server's version and
names, the S3 credentials moto accepts, and the ``restate.toml`` it is configured by (its
ports, and snapshots to an S3-compatible endpoint, which ``snapledger local up`` prints too).
"""

from __future__ import annotations

from pathlib import Path

from snapledger.layouts.restate_keys import RECOMMENDED_NUM_RETAINED
from snapledger.local.dynamodb_local import REPO_ROOT

RESTATE_VERSION = "1.7.12"
DEFAULT_BIN_DIR = REPO_ROOT / ".local" / "restate" / "bin"

BUCKET = "restate-snapshots"
PREFIX = "cluster-a"
CLUSTER_NAME = "snapledger-test"
NODE_NAME = "node-1"
REGION = "us-east-1"
ACCESS_KEY = "testing"
SECRET_KEY = "testing"  # noqa: S105 - moto accepts any key; not a secret


class RestateHarnessError(RuntimeError):
    """The Restate cluster could not be set up or a step of it failed."""


def snapshots_toml(
    *,
    destination: str,
    endpoint: str,
    num_retained: int = RECOMMENDED_NUM_RETAINED,
    snapshot_interval_num_records: int | None = None,
    region: str = REGION,
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
) -> str:
    """restate.toml's ``[worker.snapshots]`` table for an S3-compatible endpoint over plain
    HTTP (moto's server, ``snapledger local up --s3-port``): what the cluster here runs with
    and what ``local up`` prints. ``num-retained`` is always set (Restate's default, 1,
    evicts a snapshot as soon as the next lands): by default to the recommended 255."""
    if not 1 <= num_retained <= RECOMMENDED_NUM_RETAINED:
        raise ValueError(
            f"num_retained {num_retained}: Restate keeps 1 to {RECOMMENDED_NUM_RETAINED} "
            f"snapshots per partition; give a number in that range ({RECOMMENDED_NUM_RETAINED} "
            "lets snapledger's policy decide, docs/restate.md#num-retained)"
        )
    lines = ["[worker.snapshots]", f'destination = "{destination}"']
    lines.append(f"num-retained = {num_retained}")
    if snapshot_interval_num_records is not None:
        lines.append(f"snapshot-interval-num-records = {snapshot_interval_num_records}")
    lines += [
        f'aws-endpoint-url = "{endpoint}"',
        "aws-allow-http = true",
        f'aws-region = "{region}"',
        f'aws-access-key-id = "{access_key}"',
        f'aws-secret-access-key = "{secret_key}"',
    ]
    return "\n".join(lines) + "\n"


def server_toml(
    *, partitions: int, fabric_port: int, admin_port: int, ingress_port: int, snapshots: str
) -> str:
    """The whole restate.toml of one node on loopback: its ports (fabric, admin, ingress),
    ``partitions`` partitions, and the ``[worker.snapshots]`` table ``snapshots``."""
    return (
        f'cluster-name = "{CLUSTER_NAME}"\n'
        f'node-name = "{NODE_NAME}"\n'
        f"default-num-partitions = {partitions}\n"
        f'bind-address = "127.0.0.1:{fabric_port}"\n'
        f'advertised-address = "{fabric_url(fabric_port)}"\n'
        "disable-telemetry = true\n"
        'shutdown-timeout = "5s"\n'
        'rocksdb-total-memory-size = "512 MiB"\n'
        "\n[admin]\n"
        f'bind-address = "127.0.0.1:{admin_port}"\n'
        "disable-web-ui = true\n"
        "\n[ingress]\n"
        f'bind-address = "127.0.0.1:{ingress_port}"\n'
        f"\n{snapshots}"
    )


def fabric_url(fabric_port: int) -> str:
    """The node's fabric address: what it advertises and what restatectl talks to."""
    return f"http://127.0.0.1:{fabric_port}/"


def server_command(bin_dir: Path, config_path: Path, base_dir: Path) -> list[str]:
    """restate-server under ``bin_dir`` with the restate.toml at ``config_path``, its data
    under ``base_dir``, on TCP ports, its log plain text."""
    return [
        str(bin_dir / "restate-server"),
        "--config-file",
        str(config_path),
        "--base-dir",
        str(base_dir),
        "--listen-mode",
        "tcp",
        "--no-logo",
        "--log-disable-ansi-codes",
        "true",
    ]
