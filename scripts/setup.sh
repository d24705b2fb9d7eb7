#!/usr/bin/env bash
# Set up everything coldstart needs on a fresh Debian/Ubuntu machine (idempotent):
#   - Debian packages the tests use (chromium for the HTML report check);
#   - a Python virtual environment in .venv with the kit and its pinned dependencies
#     (pip's download cache stays in ~/.cache/pip, outside the clone);
#   - the openWakeWord models, fetched from PyPI and checked by sha256;
#   - the host runtime: onnxruntime with XNNPACK (a Debian 13 root under
#     ~/.cache/coldstart on Debian 12) and the native workload built against it;
#   - rn-host: the app's JS and onnxruntime-react-native's C++ built in that root
#     (docs/rn-host.md; about 90 s the first time, nothing when up to date).
# Needs root for apt-get/debootstrap/chroot (see the README for a user without root).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

PYTHON=${PYTHON:-python3}
APT_PACKAGES=(chromium debootstrap patch xz-utils)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  command -v llvm-symbolizer >/dev/null || missing+=(llvm)   # crash symbolization tests
  command -v c++ >/dev/null || missing+=(g++)
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.coldstart-deps
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing the kit and its pinned dependencies"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  echo "$want" > "$stamp"
fi

log "model set"
.venv/bin/coldstart models fetch

log "host runtime (onnxruntime with XNNPACK) and the native workload"
.venv/bin/coldstart runtime prepare

# The app itself on the host (docs/rn-host.md): runs in the Debian root only.
if .venv/bin/coldstart runtime info 2>/dev/null | grep -q '"kind": "debian-root"'; then
  log "rn-host: the app's JS with onnxruntime-react-native's C++ (npm, JavaScriptCore)"
  .venv/bin/coldstart rn-host build
else
  log "rn-host skipped: it runs in the kit's Debian root, and this runtime is another kind"
fi
