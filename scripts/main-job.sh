#!/usr/bin/env bash
# The main job on its embedded default: set everything up, then a short host campaign of the
# production shape (3 sessions created concurrently on XNNPACK, as Promise.all does) and of
# the serial control, and compare them. Usage: scripts/main-job.sh [LAUNCHES] (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
launches=${1:-20}
scripts/setup.sh
out="runs/main-job-$(date -u +%Y%m%d-%H%M%S)"
printf '\n== host campaigns (%s launches each) into %s\n' "$launches" "$out"
.venv/bin/coldstart run host --launches "$launches" --scenario 'mode=concurrent' \
  --label concurrent --out "$out/concurrent"
.venv/bin/coldstart run host --launches "$launches" --scenario 'mode=serial' \
  --label serial --out "$out/serial"
if .venv/bin/coldstart compare --help >/dev/null 2>&1; then
  printf '\n== compare: concurrent (baseline) vs serial (candidate)\n'
  .venv/bin/coldstart compare "$out/concurrent" "$out/serial" --out "$out/comparison"
fi
