#!/usr/bin/env bash
# The React Native app's off-device checks (docs/app.md, "Tests"), self-contained and
# idempotent; CI runs it through scripts/test.sh.
#
#   scripts/test-rn.sh
#
# 1. npm ci in rn-app/ (skipped when package-lock.json, package.json, patches/ and the Node
#    version are unchanged), with npm's cache outside the clone and onnxruntime-node's
#    postinstall skipped (it only fetches CUDA binaries);
# 2. the model set: fetched with the venv's `coldstart models fetch` if missing, then
#    copied into rn-app/assets/models (checked against models/manifest.json);
# 3. tsc --noEmit; 4. Jest (scenario/protocol vectors, the pipeline on the real models
#    through onnxruntime-node, the launch and the screen); 5. the shared C++ crash code,
#    compiled and run: segv must die by SIGSEGV, abort by SIGABRT;
# 6. Metro release bundles for Android and iOS, then a check that both carry the three
#    models and the clip byte for byte.
# Assumes the Python venv exists (.venv, made by scripts/setup.sh). Node >= 20.19.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

export npm_config_cache="${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/npm"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
export ONNXRUNTIME_NODE_INSTALL=skip
export CI="${CI:-false}"

t0=$SECONDS
step() { printf '\n== rn: %s (%ds)\n' "$*" "$((SECONDS - t0))"; }

step "model set"
if ! .venv/bin/coldstart models verify >/dev/null 2>&1; then
  .venv/bin/coldstart models fetch
fi

cd rn-app
stamp=node_modules/.coldstart-installed
want="$(cat package-lock.json package.json patches/*.patch | sha256sum | cut -d' ' -f1) node-$(node --version)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
else
  step "npm ci skipped (node_modules up to date)"
fi

step "copy the model set into the app"
node scripts/copy-models.js

step "tsc --noEmit"
npx tsc --noEmit

step "jest"
npx jest --ci --maxWorkers=2

step "native crash code (shared C++)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c++ -O1 -Wall -Wextra -Werror -fno-exceptions -fno-rtti -o "$tmp/crash_main" \
  modules/coldstart-native/cpp/test/crash_main.cpp modules/coldstart-native/cpp/coldstart_native.cpp
check_crash() {  # KIND EXPECTED_STATUS
  local status=0
  # in a child shell whose stderr is muted: bash reports a child's death by signal
  # ("Segmentation fault") from the shell that waited for it
  bash -c 'ulimit -c 0; "$1" "$2"; exit $?' _ "$tmp/crash_main" "$1" 2>/dev/null || status=$?
  if [ "$status" != "$2" ]; then
    echo "crash_main $1 exited with status $status, expected $2" >&2
    exit 1
  fi
  echo "ok  crash_main $1 -> status $status"
}
check_crash segv 139    # 128 + SIGSEGV
check_crash abort 134   # 128 + SIGABRT
check_crash none 3      # unknown kind: returns

step "Metro release bundle: android"
rm -rf build/android build/ios
npx react-native bundle --platform android --dev false --entry-file index.js \
  --bundle-output build/android/index.android.bundle --assets-dest build/android/res \
  --max-workers 2 >/dev/null
step "Metro release bundle: ios"
npx react-native bundle --platform ios --dev false --entry-file index.js \
  --bundle-output build/ios/main.jsbundle --assets-dest build/ios \
  --max-workers 2 >/dev/null

step "bundles carry the model set"
node scripts/check-bundles.js build/android build/ios

step "done"
echo "rn: all checks passed in $((SECONDS - t0)) s (bundles in $repo/rn-app/build)"
