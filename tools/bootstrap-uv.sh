#!/usr/bin/env bash
# Installs the pinned uv into a project-local directory (.local/uv/bin), for machines that
# have no uv and whose system Python refuses `pip install` (PEP 668: Debian's and Ubuntu's
# python3 is "externally managed"). Two ways, the first that works:
#   1. a throwaway virtual environment (`python3 -m venv`) whose own pip installs uv;
#   2. without venv (Debian without python3-venv has no ensurepip): `pip download` the wheel,
#      which PEP 668 allows since it installs nothing, and unpack its binaries.
# Either way only the self-contained `uv` and `uvx` binaries are kept. Idempotent: does
# nothing if the pinned version is already there. Prints the path of uv on stdout.
set -euo pipefail
version="0.13.9"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.local/uv"  # the project's own: replaced whole below
python="${PYTHON:-python3}"

is_pinned_uv() { # the binary runs and is the pinned version ("uv 0.13.9 (...)")
  local out
  out="$("$1" --version 2>/dev/null)" || return 1
  [[ $out == "uv $version" || $out == "uv $version "* ]]
}

if is_pinned_uv "$dest/bin/uv"; then
  echo "$dest/bin/uv"
  exit 0
fi
command -v "$python" >/dev/null || {
  echo "bootstrap-uv: no $python on PATH: install Python 3.11+ (apt-get install python3), or uv (https://docs.astral.sh/uv/getting-started/installation/)" >&2
  exit 1
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
pip_quiet=(--quiet --disable-pip-version-check --no-input)

# Exit codes of the two ways: 1 = this way is unavailable here, 2 = it failed (e.g. no network).
from_venv() {
  "$python" -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1 || return 1
  "$tmp/venv/bin/python" -m pip install "${pip_quiet[@]}" --only-binary=:all: "uv==$version" \
    || return 2
  cp "$tmp/venv/bin/uv" "$tmp/venv/bin/uvx" "$tmp/bin/"
}

from_wheel() {
  "$python" -m pip --version >/dev/null 2>&1 || return 1
  "$python" -m pip download "${pip_quiet[@]}" --no-deps --only-binary=:all: \
    --dest "$tmp/wheel" "uv==$version" || return 2
  # The wheel keeps its binaries under uv-<version>.data/scripts/.
  "$python" - "$tmp/wheel" "$tmp/bin" <<'PY'
import os
import pathlib
import sys
import zipfile

wheel_dir, bin_dir = map(pathlib.Path, sys.argv[1:])
(wheel,) = wheel_dir.glob("uv-*.whl")
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        folder, _, script = name.rpartition("/")
        if folder.endswith(".data/scripts") and script in ("uv", "uvx"):
            target = bin_dir / script
            target.write_bytes(archive.read(name))
            os.chmod(target, 0o755)
PY
}

echo "bootstrap-uv: installing uv $version into $dest (no uv on PATH)..." >&2
status=1
for way in from_venv from_wheel; do
  status=0
  "$way" || status=$?
  if ((status == 0)); then
    break
  elif ((status == 2)); then
    echo "bootstrap-uv: pip could not fetch uv==$version from PyPI (see above): check network access to pypi.org, or install uv yourself: https://docs.astral.sh/uv/getting-started/installation/" >&2
    exit 1
  elif [[ $way == from_venv ]]; then
    echo "bootstrap-uv: '$python -m venv' does not work here; downloading the uv wheel with pip instead..." >&2
  fi
done
if ((status != 0)); then
  echo "bootstrap-uv: cannot install uv: $python has neither a working venv module nor pip." >&2
  sed 's/^/  venv: /' "$tmp/venv.log" >&2
  echo "  On Debian/Ubuntu: sudo apt-get install python3-venv   (then run make again)" >&2
  echo "  Or install uv yourself: https://docs.astral.sh/uv/getting-started/installation/" >&2
  exit 1
fi
is_pinned_uv "$tmp/bin/uv" || {
  echo "bootstrap-uv: the installed uv does not run or is not version $version: $("$tmp/bin/uv" --version 2>&1 || true)" >&2
  exit 1
}
# Replace an older pinned version only once the new one is known to run.
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/bin" "$dest/bin"
echo "bootstrap-uv: $("$dest/bin/uv" --version) installed in $dest" >&2
echo "$dest/bin/uv"
