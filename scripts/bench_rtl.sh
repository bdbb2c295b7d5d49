#!/usr/bin/env bash
# RTL co-simulation speed benchmark: RTL cycles per host second of the decoupled tile
# adapter around the Verilator PE arrays (with stalls, and with FST tracing). Builds
# the bench_rtl target if needed. Usage: scripts/bench_rtl.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
"$root/scripts/build.sh" "$dir" >/dev/null
if [ ! -x "$dir/tests/bench_rtl" ]; then
  echo "bench_rtl: not built (Verilator missing? see docs/rtl-cosim.md)" >&2
  exit 1
fi
exec "$dir/tests/bench_rtl"
