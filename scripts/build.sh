#!/usr/bin/env bash
# Configures and builds trnsim. Usage: scripts/build.sh [BUILD_DIR [extra cmake args]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
shift || true
jobs="${TRNSIM_JOBS:-$(nproc)}"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$dir" -j "$jobs"
