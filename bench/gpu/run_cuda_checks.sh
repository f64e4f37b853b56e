#!/usr/bin/env bash
# Every CUDA check of Tessera in one run, for a machine with an NVIDIA GPU (the lent H200);
# finishes in under 8 minutes (each step gets what is left of the budget):
#   1. configure + build (Release, ninja) in build/gpu-check: every *cuda*_test target,
#      cuda_bench, and the `tessera` CLI (with tessera-cts when that target exists);
#   2. ctest -R 'cuda|Cuda': the driver tests against the system's libcuda (and the fake), the
#      codegen tests, and the bench smoke run;
#   3. cuda_bench --json $OUT/bench.json (copy, fused elementwise, softmax, tiled matmul vs
#      cuBLAS sgemm, and the matrix-op GEMM (bench/gpu/gemm_mx.tir) f32 and bf16 at 2048^3
#      and 4096^3 vs cuBLAS sgemm / GemmEx, each with its ratio and the 0.8 target);
#   4. tessera cts --device cuda:0 (skipped with a note when the subcommand is absent);
#   5. tessera conform --device cuda:0 --json $OUT/conform.json.
# Each check runs as soon as what it needs is built (the CLI, the slowest build, comes last),
# so a slow step costs only the steps after it.
# Writes $OUT/results.json (OUT defaults to ./gpu-out) and one log per step in $OUT. Exit 0
# when every step passed, or when there is no GPU (the CUDA tests and the bench then report
# their skips, which is a pass); 1 when a GPU is present and a step failed.
#
# Usage: OUT=/some/dir bench/gpu/run_cuda_checks.sh
#   env: BUDGET_S=470 (seconds for everything), JOBS=$(nproc), BUILD=build/gpu-check,
#        BUILD_TYPE=Release
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
BUILD=${BUILD:-$ROOT/build/gpu-check}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}
BUDGET_S=${BUDGET_S:-470}
START=$(date +%s)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

STEPS=()      # one JSON object per step
FAILED=0

log() { printf '[%4ds] %s\n' "$(($(date +%s) - START))" "$*"; }
json_escape() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\000-\037'; }

# record NAME STATUS SECONDS NOTE
record() {
  STEPS+=("{\"name\": \"$1\", \"status\": \"$2\", \"seconds\": $3, \"log\": \"$1.log\", \"note\": \"$(json_escape "$4")\"}")
  log "$1: $2${4:+ ($4)}"
  if [ "$2" = fail ] || [ "$2" = timeout ]; then FAILED=1; fi
}

# step NAME CAP_SECONDS COMMAND...: runs with the smaller of CAP and the budget left.
step() {
  local name=$1 cap=$2; shift 2
  local left=$((BUDGET_S - ($(date +%s) - START)))
  if [ "$left" -lt 10 ]; then
    record "$name" timeout 0 "no time left in the ${BUDGET_S}s budget"
    return 1
  fi
  [ "$cap" -lt "$left" ] || cap=$left
  log "$name (up to ${cap}s): $*"
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=10 "$cap" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0))
  tail -n 15 "$OUT/$name.log" | sed 's/^/    /'
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" timeout "$took" "stopped after ${cap}s"
  elif [ $rc -ne 0 ]; then
    record "$name" fail "$took" "exit status $rc"
  else
    record "$name" pass "$took" ""
  fi
  return $rc
}

# ---- the machine -------------------------------------------------------------------------
GPU=""
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
fi
HAVE_GPU=false
[ -n "$GPU" ] && HAVE_GPU=true
log "GPU: ${GPU:-none found (nvidia-smi absent or lists no GPU): the CUDA checks will report skips}"

# ---- 1. configure + build ----------------------------------------------------------------
# Separate builds, so that a target broken elsewhere in the tree costs only what needs it.
CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DTESSERA_BUILD_FUZZERS=OFF)
if command -v clang++-19 >/dev/null 2>&1; then
  CMAKE_ARGS+=(-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19)
fi
CONFIGURED=false TESTS_BUILT=false BENCH_BUILT=false CLI_BUILT=false
step configure 150 cmake "${CMAKE_ARGS[@]}" && CONFIGURED=true
if $CONFIGURED; then
  # Every gtest target with "cuda" in its name (the driver's, the codegen's, ...).
  mapfile -t TEST_TARGETS < <(ninja -C "$BUILD" -t targets all 2>/dev/null |
    sed -n 's/^cmake_object_order_depends_target_\([A-Za-z0-9_]*cuda[A-Za-z0-9_]*_test\): phony$/\1/p')
  if [ ${#TEST_TARGETS[@]} -eq 0 ]; then
    record build-tests fail 0 "no *cuda*_test target in the build"
  else
    step build-tests 300 ninja -C "$BUILD" -k 0 -j "$JOBS" "${TEST_TARGETS[@]}" && TESTS_BUILT=true
  fi
  step build-bench 240 ninja -C "$BUILD" -j "$JOBS" cuda_bench && BENCH_BUILT=true
fi

# ---- 2-3. the tests and the benchmark, as soon as they are built ------------------------
if $TESTS_BUILT || $BENCH_BUILT; then
  step ctest 120 ctest --test-dir "$BUILD" -R 'cuda|Cuda' --output-on-failure -j 8 \
    --output-junit "$OUT/ctest.xml"
else
  record ctest skip 0 "no CUDA test built"
fi
if $BENCH_BUILT; then
  step bench 150 "$BUILD/bench/gpu/cuda_bench" --json "$OUT/bench.json"
else
  record bench skip 0 "cuda_bench did not build"
fi

# ---- 4-5. the CLI: cts and conform ----------------------------------------------------------
TESSERA=$BUILD/tools/tessera
if $CONFIGURED; then
  CLI_TARGETS=(tessera)
  if ninja -C "$BUILD" -t query tessera-cts >/dev/null 2>&1; then CLI_TARGETS+=(tessera-cts); fi
  step build-cli 240 ninja -C "$BUILD" -j "$JOBS" "${CLI_TARGETS[@]}" && CLI_BUILT=true
fi
if ! $CLI_BUILT; then
  record cts skip 0 "the tessera CLI did not build"
  record conform skip 0 "the tessera CLI did not build"
else
  if ! "$TESSERA" --help 2>&1 | grep -q '^ *cts'; then
    record cts skip 0 "this tessera has no 'cts' subcommand"
  elif $HAVE_GPU; then
    step cts 120 "$TESSERA" cts --device cuda:0
  else
    record cts skip 0 "no NVIDIA GPU"
  fi
  if $HAVE_GPU; then
    step conform 300 "$TESSERA" conform --device cuda:0 --json "$OUT/conform.json" -j "$JOBS"
  else
    record conform skip 0 "no NVIDIA GPU"
  fi
fi

# ---- results.json --------------------------------------------------------------------------
BENCH_JSON=null
[ -s "$OUT/bench.json" ] && BENCH_JSON=$(cat "$OUT/bench.json")
# A failure without a GPU is still a failure of the build or of the CPU-side tests.
PASSED=true
[ $FAILED -eq 0 ] || PASSED=false
{
  printf '{\n  "schema": "tessera-gpu-check/1",\n'
  printf '  "gpu": "%s",\n  "have_gpu": %s,\n' "$(json_escape "$GPU")" "$HAVE_GPU"
  printf '  "commit": "%s",\n' "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  printf '  "seconds": %d,\n  "steps": [\n' "$(($(date +%s) - START))"
  for i in "${!STEPS[@]}"; do
    printf '    %s%s\n' "${STEPS[$i]}" "$([ "$i" -lt $((${#STEPS[@]} - 1)) ] && echo ,)"
  done
  printf '  ],\n  "bench": %s,\n  "passed": %s\n}\n' "$BENCH_JSON" "$PASSED"
} >"$OUT/results.json"

log "results: $OUT/results.json (passed: $PASSED)"
[ $FAILED -eq 0 ]
