# snapledger: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := bash
# uv on PATH, else `python3 -m uv`, else the pinned uv bootstrapped into .local/uv (works
# where the system Python refuses `pip install`, PEP 668): see tools/project-uv.
UV := tools/project-uv
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
# jsii silences its Node end-of-life banner only for the major version named ("1" does not).
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)

# The Kafka Streams application's jar (kafka/app/pom.xml); its dependencies go to lib/ beside it.
KAFKA_APP_JAR := kafka/app/target/kafka-streams-totals.jar
# The Kafka Streams task-folder seeder (kafka/seeder; docs/kafka-streams-format.md), likewise.
SEEDER_JAR := kafka/seeder/target/kafka-seeder.jar
# The Fluss client program (fluss/client; docs/fluss.md), likewise.
FLUSS_PROBE_JAR := fluss/client/target/fluss-probe.jar
# The test processes `make test` runs the suite in (pytest-xdist; 0: one process, no workers).
TEST_WORKERS ?= 2

.PHONY: setup test lint format bench demo demo-restate demo-kafka demo-fluss synth schema clean

setup: .venv/.synced .local/dynamodb-local/DynamoDBLocal.jar .local/restate/bin/restate-server \
	.local/aws-sdk-v2/.installed .local/kafka/libs/kafka_2.13-4.4.0.jar $(KAFKA_APP_JAR) $(SEEDER_JAR) \
	.local/fluss/lib/fluss-server-0.7.0.jar $(FLUSS_PROBE_JAR)

.venv/.synced: pyproject.toml uv.lock
	$(UV) sync --frozen
	@touch $@

.local/dynamodb-local/DynamoDBLocal.jar:
	tools/install-dynamodb-local.sh

.local/restate/bin/restate-server:
	tools/install-restate.sh

# The Kafka 4.4.0 broker's jars (KRaft mode) from Maven Central into .local/kafka/libs.
.local/kafka/libs/kafka_2.13-4.4.0.jar:
	tools/install-kafka.sh

# The Kafka Streams application the Kafka tests run (kafka/app): the jar and its lib/ folder,
# rebuilt when its sources change.
$(KAFKA_APP_JAR): kafka/app/pom.xml $(shell find kafka/app/src -type f 2>/dev/null)
	mvn -B -q $(MAVEN_ARGS) -f kafka/app/pom.xml package

$(SEEDER_JAR): kafka/seeder/pom.xml $(shell find kafka/seeder/src/main -type f 2>/dev/null)
	mvn -B -q $(MAVEN_ARGS) -f kafka/seeder/pom.xml -DskipTests package

# The Fluss 0.7.0 servers' jars (ZooKeeper bundled) from Maven Central into .local/fluss/lib.
.local/fluss/lib/fluss-server-0.7.0.jar:
	tools/install-fluss.sh

# The Fluss client program the Fluss tests run (fluss/client): the jar and its lib/ folder.
$(FLUSS_PROBE_JAR): fluss/client/pom.xml $(shell find fluss/client/src -type f 2>/dev/null)
	mvn -B -q $(MAVEN_ARGS) -f fluss/client/pom.xml package

# The AWS SDK for Java v2 S3 client for a local Spark driver (EMR's images ship it): ~8 MB.
.local/aws-sdk-v2/.installed: tools/aws-sdk-v2.jars
	tools/install-aws-sdk-v2.sh

test: setup
	$(UV) run --frozen pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The import layers ([tool.layers] in pyproject.toml) and the module and class sizes
# ([tool.sizes]) first: the fastest, standard library only.
# Only the synced environment: linting downloads no DynamoDB Local, Restate, Kafka or Java build.
lint: .venv/.synced
	$(UV) run --frozen python tools/check_layers.py
	$(UV) run --frozen python tools/check_sizes.py
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy shared/snapledger functions

format: setup
	$(UV) run --frozen ruff format .
	$(UV) run --frozen ruff check --fix .

bench: setup
	$(UV) run --frozen python -m bench $(BENCH_ARGS)

demo: setup
	$(UV) run --frozen python -m snapledger.demos.lifecycle $(DEMO_ARGS)

# The real Restate 1.7.12 server's snapshots registered, retained, healed and restored from.
demo-restate: setup
	$(UV) run --frozen python -m snapledger.demos.restate $(DEMO_ARGS)

# A Kafka Streams application's stores snapshotted, and an instance booted from them vs one
# replaying the changelog (the real broker and application; docs/kafka-streams.md).
demo-kafka: setup
	$(UV) run --frozen python -m snapledger.demos.kafka_streams $(DEMO_ARGS)

# A real Fluss 0.7 cluster's KV snapshots registered, collected beside Fluss's own retention,
# a torn SST healed and a wiped tablet server restored (docs/fluss.md).
demo-fluss: setup
	$(UV) run --frozen python -m snapledger.demos.fluss $(DEMO_ARGS)

# The same command cdk.json gives the CDK CLI.
synth: setup
	tools/cdk-app

schema: setup
	$(UV) run --frozen python -m snapledger.models.schema_export

clean:
	rm -rf .venv .local .bench cdk.out .pytest_cache .mypy_cache .ruff_cache kafka/*/target fluss/*/target
