#!/usr/bin/env bash
# Fuzzes the parsers with libFuzzer (tests/fuzz): configures and builds the clang
# tree build-fuzz (TRNSIM_FUZZ=ON), then runs each target for SECONDS on a fresh
# copy of its seed corpus (tests/fuzz/corpus/<t>, the regression inputs in
# tests/fuzz/regressions/<t>, and for tbin the assembly seeds encoded).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   TARGET: asm tbin config onnx (default all)
# Prints runs, coverage and findings per target; exits non-zero when a target found
# a crash, sanitizer report, timeout or OOM (inputs kept in build-fuzz/fuzz-artifacts/).
# TRNSIM_FUZZ_BUILD_DIR overrides the build tree; TRNSIM_JOBS (default 2) is the build
# parallelism and how many targets fuzz at once. TRNSIM_FUZZ_SEED fixes libFuzzer's
# seed (default: a new random seed per run, printed in the log). A seed alone does not
# repeat a run: a time budget ends after however many inputs the machine managed, and
# protobuf's hash tables are seeded from addresses (ASLR), which moves the coverage
# the fuzzer steers by. TRNSIM_FUZZ_RUNS="asm=N tbin=N ..." gives targets a budget in
# inputs instead (SECONDS then only caps each at 4x), and a seeded run switches ASLR
# off (setarch -R, where the kernel lets it): the same inputs on every run, whatever
# the machine's speed, from the same checkout path (the path still moves addresses).
# `ctest --test-dir build-fuzz/tests/fuzz` runs each target once over its corpus.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TRNSIM_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${TRNSIM_JOBS:-2}"
seconds="${1:-60}"
shift || true
case "$seconds" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
all=(asm tbin config onnx)
for kv in ${TRNSIM_FUZZ_RUNS:-}; do
  case "${kv%%=*}" in asm | tbin | config | onnx) n="${kv#*=}" ;; *) n="" ;; esac
  case "$n" in
    '' | *[!0-9]*)
      echo "fuzz.sh: TRNSIM_FUZZ_RUNS entry '$kv' is not TARGET=COUNT (targets: ${all[*]})" >&2
      exit 2 ;;
  esac
done
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for i in "${!targets[@]}"; do
  t="${targets[$i]#fuzz_}"
  case " ${all[*]} " in
    *" $t "*) targets[$i]="$t" ;;
    *) echo "fuzz.sh: unknown target '${targets[$i]}' (known: ${all[*]})" >&2; exit 2 ;;
  esac
done

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (libFuzzer needs clang: apt-get install clang)" >&2
  exit 2
fi
echo "== configure and build $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTRNSIM_FUZZ=ON \
  -DTRNSIM_TESTS=OFF -DTRNSIM_WITH_VERILATOR=OFF >/dev/null
ninja -C "$build" -j "$jobs" make_tbin_seeds "${targets[@]/#/fuzz_}"

artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
# Symbolized reports; a sanitizer finding aborts so libFuzzer records the input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target: a fresh corpus copy, a time-limited run, a summary line in
# $build/fuzz-$t.summary; returns non-zero on a finding.
run_target() {
  local t="$1" corpus="$build/fuzz-corpus/$1" log="$build/fuzz-$1.log" rc=0 before after
  rm -rf "$corpus"
  mkdir -p "$corpus"
  for d in "$root/tests/fuzz/corpus/$t" "$root/tests/fuzz/regressions/$t"; do
    if [ -d "$d" ] && [ -n "$(ls -A "$d")" ]; then cp "$d"/* "$corpus"/; fi
  done
  if [ "$t" = tbin ]; then
    "$build/tests/fuzz/make_tbin_seeds" "$corpus" "$root"/tests/fuzz/corpus/asm/*.tasm
  fi
  local runs_budget="" cap="$seconds" budget="${seconds}s" pre=() kv
  for kv in ${TRNSIM_FUZZ_RUNS:-}; do
    if [ "${kv%%=*}" = "$t" ]; then runs_budget="${kv#*=}"; fi
  done
  if [ -n "$runs_budget" ]; then
    cap=$((seconds * 4))
    budget="$runs_budget inputs"
  fi
  local args=(-max_total_time="$cap" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
              -reload=0 -artifact_prefix="$artifacts/$t-")
  [ -n "$runs_budget" ] && args+=(-runs="$runs_budget")
  if [ -n "${TRNSIM_FUZZ_SEED:-}" ]; then
    args+=(-seed="$TRNSIM_FUZZ_SEED")
    if setarch "$(uname -m)" -R true 2>/dev/null; then pre=(setarch "$(uname -m)" -R); fi
  fi
  [ -f "$root/tests/fuzz/$t.dict" ] && args+=(-dict="$root/tests/fuzz/$t.dict")
  before=$(ls "$artifacts" | grep -c "^$t-" || true)
  echo "== fuzz_$t for $budget (log: $log)"
  local start=$SECONDS
  # The outer timeout only guards against a fuzzer that stops honouring its own limit.
  timeout --kill-after=10 $((cap + 300)) \
    "${pre[@]}" "$build/tests/fuzz/fuzz_$t" "${args[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  after=$(ls "$artifacts" | grep -c "^$t-" || true)
  local runs cov found line
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$( (grep -oE '^#[0-9]+' "$log" || true) | tail -1 | tr -d '#')
  cov=$( (grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" || true) | tail -1)
  found=$((after - before))
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then found=1; fi  # e.g. a crash outside an input
  line="fuzz_$t: ${runs:-0} runs in $((SECONDS - start))s, ${cov:-no coverage line}, $found crash(es)"
  if [ "$rc" -ne 0 ]; then
    line+=" (exit $rc)"
    {
      grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz finding|.*runtime error)' "$log" | head -5 | sed 's/^/    /' || true
      ls -t "$artifacts" | grep "^$t-" | head -"$found" | sed "s|^|    artifact: $artifacts/|" || true
    } >"$build/fuzz-$t.details"
  fi
  echo "$line" >"$build/fuzz-$t.summary"
  return "$rc"
}

# Targets run side by side, TRNSIM_JOBS at a time (each fuzzer is one process).
rm -f "$build"/fuzz-*.summary "$build"/fuzz-*.details
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$t" &
done
wait || true
failed=0
summary=()
for t in "${targets[@]}"; do
  line=$(cat "$build/fuzz-$t.summary" 2>/dev/null || echo "fuzz_$t: no result (the run died)")
  case "$line" in *"(exit"* | *"no result"*) failed=1 ;; esac
  summary+=("$line")
  [ -f "$build/fuzz-$t.details" ] && summary+=("$(cat "$build/fuzz-$t.details")")
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
