#!/usr/bin/env bash
# Installs the Restate server and restatectl (v1.7.12, Linux x86-64) from the npm packages
# that ship them, fetching only the tarballs and unpacking only their bin/ folders (no
# `npm install`, no Node.js at run time). The tests under tests/restate run the real server.
# Idempotent: does nothing if both binaries are already there.
set -euo pipefail
dest="${SNAPLEDGER_RESTATE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.local/restate}"
version="1.7.12"
if [[ -x "$dest/bin/restate-server" && -x "$dest/bin/restatectl" ]]; then
  exit 0
fi
[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] || {
  echo "the pinned Restate packages are for Linux x86-64; this is $(uname -s)-$(uname -m)" >&2
  exit 1
}
command -v npm >/dev/null || { echo "npm is needed to fetch Restate: install Node.js 18+" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching Restate $version (restate-server ~81 MB, restatectl ~9 MB)..." >&2
(cd "$tmp" && npm pack --silent "@restatedev/restate-server-linux-x64@$version" \
  "@restatedev/restatectl-linux-x64@$version" >/dev/null 2>&1)
mkdir -p "$tmp/bin"
for pkg in restate-server restatectl; do
  mkdir -p "$tmp/$pkg"
  tar -xzf "$tmp/restatedev-$pkg-linux-x64-$version.tgz" -C "$tmp/$pkg" "package/bin/$pkg"
  mv "$tmp/$pkg/package/bin/$pkg" "$tmp/bin/$pkg"
done
mkdir -p "$dest"
rm -rf "$dest/bin"
mv "$tmp/bin" "$dest/bin"
"$dest/bin/restate-server" --version >/dev/null
"$dest/bin/restatectl" --version >/dev/null
echo "Restate $version installed in $dest/bin" >&2
