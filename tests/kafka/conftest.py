"""The real Kafka 4.4.0 broker, started once per session, and the real Kafka Streams
application (kafka/app) started per test. Tests that use them are marked `kafka`; install
both with `make setup` (tools/install-kafka.sh and `mvn -f kafka/app/pom.xml package`)."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.client.control import Snapledger
from snapledger.client.writer import WrittenSnapshot
from snapledger.clock import SystemClock
from snapledger.local.handlers import HANDLERS, invoke
from snapledger.local.kafka_app import KafkaStreamsApp
from snapledger.local.kafka_broker import KafkaBroker
from snapledger.local.router import Router
from snapledger.runtime import runtime, runtime_override, use_runtime
from tests.functions.support import POWERTOOLS_ENV
from tests.support import deployed_with, make_runtime, moto_ledger

#: Small and quick: commits every 100 ms, no record cache (every update reaches the store's
#: changelog, so its record count is the number of orders processed), one stream thread.
FAST_APP_PROPERTIES = {
    "commit.interval.ms": "100",
    "statestore.cache.max.bytes": "0",
    "num.stream.threads": "1",
}


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    started = time.monotonic()
    with KafkaBroker(tmp_path_factory.mktemp("kafka-broker")) as broker:
        print(f"\nkafka broker up in {time.monotonic() - started:.1f}s", file=sys.stderr)
        yield broker


_ids = itertools.count()


@pytest.fixture
def app_factory(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> Iterator[Callable[..., KafkaStreamsApp]]:
    """Builds application instances on the session's broker (not started); each is stopped
    (killed) at the test's end if the test left it running."""
    yield from instances_on(kafka_broker, tmp_path)


def instances_on(broker: KafkaBroker, tmp_path: Path) -> Iterator[Callable[..., KafkaStreamsApp]]:
    """``app_factory`` on ``broker``: for a fixture of a module with a broker of its own."""
    made: list[KafkaStreamsApp] = []

    def make(application_id: str, state_dir: Path, **kwargs: object) -> KafkaStreamsApp:
        properties = {**FAST_APP_PROPERTIES, **kwargs.pop("properties", {})}  # type: ignore[dict-item]
        app = KafkaStreamsApp(
            broker.bootstrap_servers,
            application_id,
            state_dir,
            tmp_path / f"app-{next(_ids)}.log",
            properties=properties,
            **kwargs,  # type: ignore[arg-type]
        )
        made.append(app)
        return app

    yield make
    for app in made:
        app.stop(kill=True)


@dataclass
class Registry:
    """snapledger in-process for the Kafka tests: the functions on a moto ledger and a
    ``file://`` store; each snapshot written is delivered to the register function as the
    local runtime's router delivers an arrival (in AWS: the S3 event)."""

    client: Snapledger
    root: str
    store: FileObjectStore
    router: Router
    directory: Path  # the file:// root's folder
    ledger: DynamoLedger

    def deliver(self, written: WrittenSnapshot) -> None:
        self.router.scan((written.prefix,), settled=True)

    def apply_kafka_streams(self, *changelogs: str) -> None:
        """From now on the functions run as deployed with these changelog topics in
        ``SNAPLEDGER_KAFKA_STREAMS_STREAMS``: their runtime built again by the composition
        root, on the same ledger and store, so registration runs the kafka-streams
        strategy's checks (layouts/kafka_streams.py) on their snapshots."""
        built = deployed_with(runtime(), layouts=dict.fromkeys(changelogs, "kafka-streams"))
        use_runtime(built)
        self.router = Router(self.store, HANDLERS, built.layouts)


class _InProcess:
    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    for name, value in POWERTOOLS_ENV.items():
        monkeypatch.setenv(name, value)
    directory = tmp_path / "snapshots-root"
    store = FileObjectStore(directory)
    with moto_ledger() as ledger:
        runtime = make_runtime(ledger, store, SystemClock())
        with runtime_override(runtime):
            router = Router(store, HANDLERS, runtime.layouts)
            yield Registry(Snapledger(_InProcess()), store.uri, store, router, directory, ledger)
