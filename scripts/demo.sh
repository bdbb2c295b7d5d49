#!/usr/bin/env bash
# The main job: install what is missing, build, run the bundled example program
# (a tiled bf16 matmul with bias + GELU, tests/e2e/programs/matmul_gelu.tasm) on
# the default trn2 config and print its report.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh" "$root/build"
out="$root/out/demo"
mkdir -p "$out"
"$root/build/runtime/trnsim" run "$root/tests/e2e/programs/matmul_gelu.tasm" -c trn2 \
  --random-inputs=1 --output-dir "$out" --stats "$out/stats.json"
echo "stats tree: $out/stats.json"
