#!/usr/bin/env bash
# Installs the Fluss 0.7.0 servers that the Fluss tests run: com.alibaba.fluss:fluss-server
# (shaded; it bundles ZooKeeper 3.8.3's ZooKeeperServerMain) and slf4j-api/slf4j-simple 2.0.17,
# copied from Maven Central by fluss/server/pom.xml into .local/fluss/lib (~85 MB). Idempotent:
# does nothing if already there. SNAPLEDGER_FLUSS_DIR installs elsewhere; MAVEN_ARGS is handed
# to mvn (e.g. -Dmaven.repo.local=/tmp/m2 for a cold cache).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${SNAPLEDGER_FLUSS_DIR:-$root/.local/fluss}"
version="0.7.0"
slf4j="2.0.17"
if [[ -f "$dest/lib/fluss-server-$version.jar" && -f "$dest/lib/slf4j-api-$slf4j.jar" \
      && -f "$dest/lib/slf4j-simple-$slf4j.jar" ]]; then
  exit 0
fi
command -v java >/dev/null || { echo "the Fluss servers need Java 17+: install a JDK (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
command -v mvn >/dev/null || { echo "Maven is needed to fetch the Fluss server's jars from Maven Central: install it (apt-get install maven)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching the Fluss $version server's jars from Maven Central (~85 MB)..." >&2
# shellcheck disable=SC2086 # MAVEN_ARGS is a list of words
mvn -B -q ${MAVEN_ARGS:-} -f "$root/fluss/server/pom.xml" package \
  -Dfluss.libs="$tmp/lib" -Dfluss.build="$tmp/build" >&2
mkdir -p "$dest"
rm -rf "$dest/lib"
mv "$tmp/lib" "$dest/lib"
test -f "$dest/lib/fluss-server-$version.jar"
echo "Fluss $version server installed in $dest/lib" >&2
