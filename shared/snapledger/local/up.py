"""``snapledger local up``: a long-running local runtime a stream processor can write to.

DynamoDB Local with its data kept under the home folder, the router polling the local
root so that files dropped under ``snapshots/`` or ``changelog/`` are processed as in
AWS (once complete: unchanged across two polls; a rewrite is a new arrival, see
``router.py``), and local Spark for the jobs they start. Ctrl-C stops everything cleanly.

With ``--s3-port`` it also serves an S3 endpoint on loopback (moto's server mode) that a
Restate node can write its snapshots to, and the whole object store moves there: bucket
``snapledger-local``, Restate's objects and snapledger's side by side as in AWS. Each
``--layout PREFIX=restate:STREAM`` names a Restate cluster's prefix in it; the router
delivers the new objects under ``snapshots/``, ``changelog/`` and those prefixes to the
functions as S3 events, and the restate.toml ``[worker.snapshots]`` table to point a node
at it is printed. The endpoint keeps its objects in memory, so the ledger is kept in
memory too: both last as long as the process.

Each ``--layout KEY=LAYOUT[:STREAM]`` is an entry of the layout map (e.g.
``totals-app-totals-changelog=kafka-streams``), as ``SNAPLEDGER_LAYOUTS`` is for the
functions; ``--restate-prefix PREFIX=STREAM`` and ``--kafka-streams-stream TOPIC`` are
deprecated shorthands read into it. The map applied is the environment's joined by these
options (``layout_settings.py``); ``runtime.json`` holds it, so every process attaching to
this ``local up`` applies the same.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Iterable
from contextlib import ExitStack, suppress
from pathlib import Path
from types import FrameType
from typing import Any

from snapledger.errors import InvalidRequestError
from snapledger.layouts.layout_map import LayoutMap
from snapledger.layouts.registry import LAYOUTS
from snapledger.local import layout_settings
from snapledger.local.aws_events import LOCAL_BUCKET
from snapledger.local.dynamodb_local import NotACheckoutError, free_port
from snapledger.local.handlers import HANDLERS
from snapledger.local.layout_settings import parse_layout_options
from snapledger.local.restate_config import snapshots_toml
from snapledger.local.router import Router
from snapledger.local.runtime import RUNTIME_FILE, LocalRuntime, local_home, running_endpoint

#: Spark's own log, in the home folder (only its errors reach the console).
SPARK_LOG = "spark.log"


class BadArgumentError(ValueError):
    """An argument of ``local up`` that cannot be used: said in one line, exit status 2."""


def parse_layouts(
    layouts: Iterable[str], restate_prefixes: Iterable[str] = (), kafka_streams: Iterable[str] = ()
) -> LayoutMap:
    """``--layout KEY=LAYOUT[:STREAM]`` arguments, and the deprecated shorthands
    ``--restate-prefix PREFIX=STREAM`` and ``--kafka-streams-stream TOPIC`` read into the
    same map, checked as the deploy's ``-c layouts`` is (``layouts/layout_map.py``)."""
    shorthands = []
    for value in restate_prefixes:
        prefix, equals, stream = value.partition("=")
        if not equals or not prefix.strip() or not stream.strip():
            raise BadArgumentError(
                f"--restate-prefix {value!r}: give PREFIX=STREAM, e.g. restate/cluster-a=payments"
            )
        shorthands.append(f"{prefix.strip()}=restate:{stream.strip()}")
    shorthands += [f"{topic.strip()}=kafka-streams" for topic in dict.fromkeys(kafka_streams)]
    try:
        declared = parse_layout_options(layouts)
        return declared.joined(
            parse_layout_options(shorthands, option="--restate-prefix/--kafka-streams-stream"),
            source="--restate-prefix/--kafka-streams-stream",
        )
    except InvalidRequestError as exc:
        raise BadArgumentError(str(exc)) from exc


def restate_snippet(endpoint: str, prefix: str) -> str:
    """The restate.toml table pointing a Restate node's snapshots at ``prefix`` in the local
    runtime's bucket on ``endpoint``, with the recommended ``num-retained`` (255: without
    it Restate keeps 1, and a snapshot it evicts before the router delivers its
    ``metadata.json`` is never registered)."""
    destination = f"s3://{LOCAL_BUCKET}/{prefix.strip('/')}"
    return snapshots_toml(destination=destination, endpoint=endpoint)


def _s3_port(port: int) -> int:
    """``port`` (0: a free one), once it is known to be free on 127.0.0.1."""
    if port == 0:
        return free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise BadArgumentError(f"--s3-port {port}: 127.0.0.1:{port} is in use ({exc})") from exc
    return port


def _start_s3(port: int) -> tuple[Any, str]:
    """moto's server mode on 127.0.0.1:``port``, in this process: (server, endpoint)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def _s3_arguments(s3_port: int | None, layouts: LayoutMap) -> int | None:
    """The S3 endpoint's port (None: no endpoint), checked against the layouts: one whose
    producer writes to S3 only (Restate's) needs the endpoint."""
    s3_only = [e for e in layouts.entries if LAYOUTS[e.layout].s3_only]
    if s3_only and s3_port is None:
        entry = s3_only[0]
        raise BadArgumentError(
            f"--layout {entry.key}={entry.layout}:{entry.stream} (or --restate-prefix) needs "
            f"--s3-port: the {entry.layout} layout's producer writes its snapshots to an S3 "
            "endpoint only (it refuses file:// destinations)"
        )
    return None if s3_port is None else _s3_port(s3_port)


def run_local_up(
    *,
    home: str | Path | None,
    poll_seconds: float = 1.0,
    s3_port: int | None = None,
    layouts: Iterable[str] = (),
    restate_prefixes: Iterable[str] = (),
    kafka_streams: Iterable[str] = (),
    fluss: bool = False,
    fluss_snapshot_interval_s: int = 10,
) -> int:
    try:
        folder = local_home(home)
        declared = parse_layouts(layouts, restate_prefixes, kafka_streams)
        port = _s3_arguments(s3_port, declared)
        if fluss and port is not None:
            raise BadArgumentError(
                "--fluss keeps Fluss's remote.data.dir on the local root (Fluss's S3 file "
                "system plugin is not served here): drop --s3-port"
            )
    except (NotACheckoutError, BadArgumentError) as exc:  # one line, no traceback
        print(f"snapledger: {exc}", file=sys.stderr)
        return 2
    if running_endpoint(folder) is not None:
        print(f"a local runtime is already running for {folder}", file=sys.stderr)
        return 2
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    with ExitStack() as running:  # undone in reverse: runtime.json, the runtime, S3
        running.callback(print, "stopped", file=sys.stderr)
        s3_endpoint = None
        if port is not None:
            s3_server, s3_endpoint = _start_s3(port)
            running.callback(s3_server.stop)
        from snapledger.local.spark_runner import LocalSparkRunner

        local = LocalRuntime(
            home=folder,
            runner=LocalSparkRunner(log_file=folder / SPARK_LOG),
            in_memory=s3_endpoint is not None,  # as the endpoint's objects are
            s3_endpoint=s3_endpoint,
            layouts=declared,
        )
        cluster = None
        if fluss:
            from snapledger.local.fluss_cluster import FlussClusterError

            try:
                cluster = _start_fluss(folder, local, fluss_snapshot_interval_s)
            except FlussClusterError as exc:  # not installed, or it did not start: one line
                print(f"snapledger: {exc}", file=sys.stderr)
                return 2
            running.callback(cluster.stop)
        running.callback(local.stop)
        try:
            runtime = local.start()
        except InvalidRequestError as exc:  # a SNAPLEDGER_* setting: one line, no traceback
            print(f"snapledger: {exc}", file=sys.stderr)
            return 2
        router = Router(runtime.store, HANDLERS, runtime.layouts)
        bind = getattr(local.runner, "bind", None)
        if bind is not None:
            bind(router)
        info = _runtime_info(local, s3_endpoint, cluster)
        (folder / RUNTIME_FILE).write_text(json.dumps(info))
        running.callback((folder / RUNTIME_FILE).unlink, missing_ok=True)
        _say(local, s3_endpoint, local.applied_layouts)
        if cluster is not None:
            _say_fluss(cluster, local.applied_layouts)
        with suppress(KeyboardInterrupt):
            while not stopping:
                for answer in router.scan():
                    print(json.dumps(answer, default=str), flush=True)
                time.sleep(poll_seconds)
    return 0


def _runtime_info(local: LocalRuntime, s3_endpoint: str | None, cluster: Any) -> dict[str, object]:
    """What runtime.json says of this ``local up``: what attaching processes use."""
    info: dict[str, object] = {"pid": os.getpid(), "endpoint": local.endpoint_url}
    if s3_endpoint is not None:
        info.update(s3_endpoint=s3_endpoint)
    if cluster is not None:
        info.update(
            fluss={
                "bootstrap_servers": cluster.bootstrap_servers,
                "zookeeper": cluster.zookeeper_address,
            }
        )
    info.update(layout_settings.runtime_file(local.applied_layouts))
    return info


def _start_fluss(folder: Path, local: LocalRuntime, snapshot_interval_s: int) -> Any:
    """A Fluss cluster (``local_fluss_cluster``) whose remote.data.dir is the local root, and
    the registry's GC given its ZooKeeper; Fluss keeps up to 1,000 snapshots a bucket, so
    snapledger's policy decides (docs/fluss.md)."""
    from snapledger.local.fluss_cluster import MAX_NUM_RETAINED, FlussCluster
    from snapledger.settings import ENV_FLUSS_ZOOKEEPER

    cluster = FlussCluster(
        folder / "fluss",
        snapshot_interval_s=snapshot_interval_s,
        num_retained=MAX_NUM_RETAINED,
        remote_dir=local.root,
    )
    cluster.start()
    local.settings = {**local.settings, ENV_FLUSS_ZOOKEEPER: cluster.zookeeper_address}
    return cluster


def _say_fluss(cluster: Any, layouts: LayoutMap) -> None:
    print(f"  Fluss 0.7 at {cluster.bootstrap_servers} (ZooKeeper {cluster.zookeeper_address})")
    print(f"  its remote.data.dir is the root; logs under {cluster.work_dir}")
    tables = layouts.of("fluss-kv")
    if not tables:
        print("  no Fluss table: give --layout kv/{db}/{table}-{table_id}=fluss-kv:STREAM each")
    for entry in tables:
        print(f"  Fluss table folder {entry.key} is stream {entry.stream}", flush=True)


def _say(local: LocalRuntime, s3_endpoint: str | None, layouts: LayoutMap) -> None:
    prefixes = {e.key: e.stream for e in layouts.of("restate")}
    if s3_endpoint is None:
        print(f"snapledger local runtime: root file://{local.root}", flush=True)
        print(f"  DynamoDB Local at {local.endpoint_url}, data in {local.home / 'dynamodb'}")
        print(f"  Spark's log in {local.home / SPARK_LOG}")
        print("  drop snapshots under snapshots/ and changelog under changelog/; Ctrl-C stops")
    else:
        _say_s3(local, s3_endpoint, prefixes)
    for entry in layouts.entries:
        if not LAYOUTS[entry.layout].rooted:
            print(f"  stream {entry.stream}: snapshots checked by the {entry.layout} layout")


def _say_s3(local: LocalRuntime, endpoint: str, prefixes: dict[str, str]) -> None:
    print(f"snapledger local runtime: store {local.store_uri} at {endpoint}", flush=True)
    print(f"  S3 endpoint {endpoint} (moto's server) and DynamoDB Local at {local.endpoint_url}")
    print("  both in memory: the objects and the ledger last as long as this process")
    print(f"  Spark's log in {local.home / SPARK_LOG}")
    print("  put snapshots under snapshots/ and changelog under changelog/; Ctrl-C stops")
    if not prefixes:
        print("  no Restate cluster: give --layout PREFIX=restate:STREAM for each")
    for prefix, stream in prefixes.items():
        print(f"  Restate prefix {prefix} is stream {stream}; in the node's restate.toml:")
        print()
        print(restate_snippet(endpoint, prefix), flush=True)
