#!/usr/bin/env bash
# Installs DynamoDB Local (the official engine, v1.25) from the npm package that ships it,
# fetching only the tarball and unpacking only its emulator folder (a full `npm install`
# would pull ~350 MB of unneeded dependencies). Idempotent: does nothing if already there.
set -euo pipefail
dest="${SNAPLEDGER_DYNAMODB_LOCAL_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.local/dynamodb-local}"
version="2.9.30"
if [[ -f "$dest/DynamoDBLocal.jar" ]]; then
  exit 0
fi
command -v java >/dev/null || { echo "DynamoDB Local needs Java 17+: install a JRE (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is needed to fetch DynamoDB Local: install Node.js 18+" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching DynamoDB Local (amplify-dynamodb-simulator@$version, ~56 MB)..." >&2
(cd "$tmp" && npm pack --silent "amplify-dynamodb-simulator@$version" >/dev/null 2>&1)
tar -xzf "$tmp"/amplify-dynamodb-simulator-*.tgz -C "$tmp" package/emulator
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/package/emulator" "$dest"
test -f "$dest/DynamoDBLocal.jar"
echo "DynamoDB Local installed in $dest" >&2
