#!/usr/bin/env bash
# Installs the Kafka 4.4.0 broker (KRaft mode) that the Kafka tests and demo run: the jars of
# org.apache.kafka:kafka_2.13 and kafka-server with their runtime dependencies, copied from
# Maven Central by kafka/broker/pom.xml into .local/kafka/libs (~45 MB). Idempotent: does
# nothing if already there. SNAPLEDGER_KAFKA_DIR installs elsewhere; MAVEN_ARGS is handed to
# mvn (e.g. -Dmaven.repo.local=/tmp/m2 for a cold cache).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${SNAPLEDGER_KAFKA_DIR:-$root/.local/kafka}"
version="4.4.0"
if [[ -f "$dest/libs/kafka_2.13-$version.jar" && -f "$dest/libs/kafka-server-$version.jar" ]]; then
  exit 0
fi
command -v java >/dev/null || { echo "the Kafka broker needs Java 17+: install a JDK (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
command -v mvn >/dev/null || { echo "Maven is needed to fetch the Kafka broker's jars from Maven Central: install it (apt-get install maven)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching the Kafka $version broker's jars from Maven Central (~45 MB)..." >&2
# shellcheck disable=SC2086 # MAVEN_ARGS is a list of words
mvn -B -q ${MAVEN_ARGS:-} -f "$root/kafka/broker/pom.xml" package \
  -Dkafka.libs="$tmp/libs" -Dkafka.build="$tmp/build" >&2
mkdir -p "$dest"
rm -rf "$dest/libs"
mv "$tmp/libs" "$dest/libs"
test -f "$dest/libs/kafka_2.13-$version.jar"
echo "Kafka $version broker installed in $dest/libs" >&2
