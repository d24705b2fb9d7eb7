#!/usr/bin/env bash
# Install a pinned Appium 3 server and its fake driver into a cache outside the clone.
#
#   scripts/setup-appium.sh          # idempotent: a second run returns in well under a second
#
# Layout (override the root with XDG_CACHE_HOME):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/appium   npm prefix and APPIUM_HOME
#   ${XDG_CACHE_HOME:-$HOME/.cache}/coldstart/npm      npm's download cache
# The Appium tests (tests/test_appium*.py) start the server from there on a free loopback
# port; CI runs this script before the test suite. Appium 3 needs Node ^20.19, ^22.12 or >=24.
set -euo pipefail

APPIUM_VERSION="3.8.0"
FAKE_DRIVER_VERSION="6.2.4"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/coldstart"
prefix="$cache_root/appium"
stamp="$prefix/.coldstart-installed"
want="appium@$APPIUM_VERSION @appium/fake-driver@$FAKE_DRIVER_VERSION"

export APPIUM_HOME="$prefix"
export npm_config_cache="$cache_root/npm"
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
   && [ -f "$prefix/node_modules/appium/build/lib/main.js" ] \
   && [ -d "$prefix/node_modules/@appium/fake-driver" ]; then
  echo "setup-appium: $want already installed in $prefix"
  exit 0
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup-appium: error: node and npm are required (Node ^20.19, ^22.12 or >=24)" >&2
  exit 2
fi
node_version="$(node --version)"
if ! node -e '
  const [maj, min] = process.versions.node.split(".").map(Number);
  process.exit((maj === 20 && min >= 19) || (maj === 22 && min >= 12) || maj >= 24 ? 0 : 1);'; then
  echo "setup-appium: error: Appium $APPIUM_VERSION needs Node ^20.19, ^22.12 or >=24, not $node_version" >&2
  exit 2
fi

mkdir -p "$prefix" "$npm_config_cache"
if [ ! -f "$prefix/package.json" ]; then
  printf '{\n  "name": "coldstart-appium",\n  "private": true\n}\n' > "$prefix/package.json"
fi
echo "setup-appium: installing $want into $prefix (node $node_version)"
npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error \
  "appium@$APPIUM_VERSION"
# `appium driver install` records the driver in APPIUM_HOME's manifest as well as npm's tree.
"$prefix/node_modules/.bin/appium" driver install --source=npm \
  "@appium/fake-driver@$FAKE_DRIVER_VERSION"
printf '%s' "$want" > "$stamp"
echo "setup-appium: done"
