#!/usr/bin/env bash
# Installs the AWS SDK for Java v2 S3 client (tools/aws-sdk-v2.jars: ~8 MB of jars from Maven
# Central, each checked against its sha256) for the test that publishes a job's files with a
# conditional PutObject through a local Spark driver (tests/jobs/test_create_only.py): EMR's
# images ship the SDK; the pyspark wheel does not. Idempotent: does nothing if already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${SNAPLEDGER_AWS_SDK_V2_DIR:-$here/../.local/aws-sdk-v2}"
mirror="${SNAPLEDGER_MAVEN_MIRROR:-https://repo1.maven.org/maven2}"
list="$here/aws-sdk-v2.jars"
if [[ -f "$dest/.installed" ]] && cmp -s "$list" "$dest/.installed"; then
  exit 0
fi
command -v curl >/dev/null || { echo "curl is needed to fetch the AWS SDK for Java v2 jars" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching the AWS SDK for Java v2 S3 client (~8 MB) into $dest..." >&2
while read -r path sha256; do
  [[ -z "$path" || "$path" == \#* ]] && continue
  curl -fsSL --retry 3 -o "$tmp/${path##*/}" "$mirror/$path"
  echo "$sha256  $tmp/${path##*/}" | sha256sum --check --quiet - || {
    echo "$mirror/$path does not match its sha256 in $list" >&2
    exit 1
  }
done < "$list"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
cp "$list" "$dest/.installed"
echo "AWS SDK for Java v2 installed in $dest" >&2
