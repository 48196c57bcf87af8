"""``-c fluss``: how the gc function reaches a Fluss cluster's ZooKeeper (docs/fluss.md, "On
AWS"), read once from CDK context and checked at synth.

GC of the ``fluss-kv`` layout reads and drops the snapshot nodes Fluss keeps in ZooKeeper.
ZooKeeper runs inside the cluster's VPC, so the gc function runs there too: in the subnets
and with the security groups given (Lambda allows at most 16 and 5), with
``SNAPLEDGER_FLUSS_ZOOKEEPER`` set to the address and kazoo (the ``fluss`` extra) in a layer
of its own. Without ``-c fluss`` a ``fluss-kv`` table is registered and not collected.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

from infra import names
from snapledger.layouts.layout_map import LayoutMap

#: Fluss's ``zookeeper.address``: ``host:port[,host:port...][/chroot]``.
ZOOKEEPER_ADDRESS = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})?:[0-9]{1,5}"
    r"(?:,[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})?:[0-9]{1,5})*(?:/[A-Za-z0-9_.-]+)*"
)
SUBNET_ID = re.compile(r"subnet-[0-9a-f]{8,17}")
SECURITY_GROUP_ID = re.compile(r"sg-[0-9a-f]{8,17}")
#: Lambda's VpcConfig bounds.
MAX_SUBNETS, MAX_SECURITY_GROUPS = 16, 5
#: The setting's own bound (the function setting's, snapledger.settings).
MAX_ADDRESS_CHARS = 1024
EXAMPLE = (
    '\'{"zookeeper": "zk-1.fluss.internal:2181,zk-2.fluss.internal:2181", '
    '"subnetIds": ["subnet-0abc1234"], "securityGroupIds": ["sg-0abc1234"]}\''
)


@dataclass(frozen=True, slots=True)
class FlussNetwork:
    """Where the gc function runs to reach Fluss's ZooKeeper."""

    zookeeper: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


def fluss_network(raw: object, layouts: LayoutMap) -> FlussNetwork | None:
    """``-c fluss`` (JSON text, or an object from cdk.json) checked; None when unset. Every
    error names the field and what to give."""
    key = names.CTX_FLUSS
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ValueError(f"{key} must be a JSON object, e.g. {EXAMPLE}; got {raw!r}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{key} must be an object, e.g. {EXAMPLE}; got {raw!r}")
    unknown = sorted(set(raw) - {"zookeeper", "subnetIds", "securityGroupIds"})
    if unknown:
        raise ValueError(
            f"{key}: unknown field(s) {', '.join(unknown)}: give zookeeper, subnetIds and "
            "securityGroupIds"
        )
    zookeeper = raw.get("zookeeper")
    if isinstance(zookeeper, str) and len(zookeeper) > MAX_ADDRESS_CHARS:
        raise ValueError(
            f"{key}.zookeeper is {len(zookeeper):,} characters, over {MAX_ADDRESS_CHARS}: "
            "give Fluss's zookeeper.address"
        )
    if not isinstance(zookeeper, str) or not ZOOKEEPER_ADDRESS.fullmatch(zookeeper):
        raise ValueError(
            f"{key}.zookeeper must be Fluss's zookeeper.address, host:port[,host:port...]"
            f"[/chroot], got {zookeeper!r}"
        )
    subnets = _ids(raw.get("subnetIds"), f"{key}.subnetIds", SUBNET_ID, "subnet-", MAX_SUBNETS)
    groups = _ids(
        raw.get("securityGroupIds"),
        f"{key}.securityGroupIds",
        SECURITY_GROUP_ID,
        "sg-",
        MAX_SECURITY_GROUPS,
    )
    if not layouts.of("fluss-kv"):
        raise ValueError(
            f"{key} is set but no entry of the layout map (-c {names.CTX_LAYOUTS}) is "
            "fluss-kv: add each Fluss table's KV folder there, or leave -c fluss out"
        )
    return FlussNetwork(zookeeper, subnets, groups)


def _ids(
    raw: object, where: str, pattern: re.Pattern[str], start: str, most: int
) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(i, str) for i in raw):
        raise ValueError(f"{where} must be a non-empty list of ids ({start}...), got {raw!r}")
    if len(raw) > most:
        raise ValueError(f"{where} names {len(raw)}: Lambda takes at most {most}")
    bad = [i for i in raw if not pattern.fullmatch(i)]
    if bad:
        raise ValueError(f"{where}: {bad[0]!r} is not an id ({start} then 8 to 17 hex digits)")
    if len(set(raw)) != len(raw):
        raise ValueError(f"{where} names an id twice: {raw!r}")
    return tuple(raw)


def kazoo_package() -> Path:
    """The installed kazoo package's folder, which the gc function's layer carries."""
    spec = importlib.util.find_spec("kazoo")
    if spec is None or spec.origin is None:
        raise ValueError(
            f"-c {names.CTX_FLUSS} ships kazoo to the gc function from this environment, "
            "and it is not installed here: pip install 'snapledger[fluss]' (or `make setup`), "
            "then synthesize again"
        )
    return Path(spec.origin).parent
