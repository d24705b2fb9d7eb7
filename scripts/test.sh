#!/usr/bin/env bash
# Set everything up and run every test: the Python suite (host target for real, the other
# targets against their doubles and a real Appium server), then the React Native app's type
# check, Jest suite and release bundles. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x scripts/setup-appium.sh ]; then scripts/setup-appium.sh; fi
printf '\n== Type check (mypy: kit/, and strict on the target contract)\n'
.venv/bin/python -m mypy kit
.venv/bin/python -m mypy --strict --follow-imports=silent kit/launch kit/campaign/build.py \
  kit/targets/registry.py
printf '\n== Python tests\n'
.venv/bin/python -m pytest -q -n 2 "$@"
if [ -x scripts/test-rn.sh ]; then
  printf '\n== React Native app\n'
  scripts/test-rn.sh
fi
