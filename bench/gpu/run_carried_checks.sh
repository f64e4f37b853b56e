#!/usr/bin/env bash
# The CUDA checks from a carried archive (bench/gpu/pack_for_device.sh), for a GPU machine
# that cannot build Tessera. Run from the repository root of a checkout of the same commit:
#   OUT=/some/dir bash bench/gpu/run_carried_checks.sh [ARCHIVE]   (default .gpu/bundle.tar.xz)
# Steps, each under its own time cap (env CAP_SCALE=2 doubles them):
#   gpu        nvidia-smi
#   runtime    cuda_runtime_test (the driver against the system's libcuda and the fake)
#   codegen    cuda_codegen_test
#   bench      cuda_bench --json (copy, elementwise, softmax, tiled matmul and the matrix-op
#              GEMM vs cuBLAS)
#   conform    tessera conform --device cuda:0, the case list split over 4 processes
#   cts        tessera cts --device cuda:0
#   nccl       cuda_nccl_test
#   run-NAME   with EXTRA_TIR_DIR set: `tessera run NAME.tir --device cuda:0 --check` for each
#              .tir file there (probes: faults, hangs), 30 s each
# Writes $OUT/summary.txt (one line per step) and $OUT/logs.tar.gz (every log and JSON).
# The build tree's absolute paths (the conformance kernels, the fake libcuda) are made to
# resolve by linking the build's recorded source root to this checkout.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ARCHIVE=${1:-$ROOT/.gpu/bundle.tar.xz}
OUT=${OUT:-$ROOT/gpu-out}
SCALE=${CAP_SCALE:-1}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
START=$(date +%s)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"

note() { printf '[%4ds] %s\n' "$(($(date +%s) - START))" "$*" | tee -a "$SUMMARY"; }

# step NAME CAP COMMAND...: output to $LOGS/NAME.log, status to the summary.
step() {
  local name=$1 cap=$(($2 * SCALE)) t0 rc
  shift 2
  t0=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  local status=pass
  [ $rc -eq 0 ] || status="fail (exit $rc)"
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || status="timeout (${cap}s)"
  note "$name: $status in $(($(date +%s) - t0))s"
  tail -n 6 "$LOGS/$name.log" | sed 's/^/      /' | tee -a "$SUMMARY"
}

finish() {
  tar -C "$LOGS" -czf "$OUT/logs.tar.gz" .
  note "done"
}
trap finish EXIT

UNPACK=/tmp/tessera-carried
rm -rf "$UNPACK" && mkdir -p "$UNPACK"
if ! xz -dc "$ARCHIVE" | tar -C "$UNPACK" -xf -; then
  note "cannot unpack $ARCHIVE"
  exit 1
fi
REL=$(cat "$UNPACK/BUILD_DIR")
note "archive of commit $(cat "$UNPACK/COMMIT"); checkout at $(git -C "$ROOT" rev-parse HEAD 2>/dev/null)"
# The binaries name their source tree by absolute path (TESSERA_KERNELS_DIR, the fake
# library's directory): link that path here.
SRC=$(strings "$UNPACK/$REL/tools/tessera" | sed -n 's|^\(/[^:]*\)/ir/examples:.*|\1|p' | head -n 1)
if [ -n "$SRC" ] && [ "$SRC" != "$ROOT" ] && [ ! -e "$SRC" ]; then
  mkdir -p "$(dirname "$SRC")" && ln -s "$ROOT" "$SRC"
fi
mkdir -p "$ROOT/$REL"
cp -a "$UNPACK/$REL/." "$ROOT/$REL/"
export LD_LIBRARY_PATH=$UNPACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# cuBLAS (the bench's peer) and NCCL may live only in the Python wheels (nvidia-cublas,
# nvidia-nccl-cu13): add their directories after the carried ones.
WHEELS=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
for d in $(find /usr/local/cuda*/lib64 $WHEELS \( -name 'libcublas.so.1[23]' -o -name 'libnccl.so.2' \) \
             -printf '%h\n' 2>/dev/null | sort -u); do
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
done
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
B=$ROOT/$REL
T=$B/tools/tessera
export XDG_CACHE_HOME=/tmp/tessera-carried-cache

step gpu 10 nvidia-smi
step runtime 45 "$B/backends/cuda/runtime/tests/cuda_runtime_test" --gtest_brief=1
step codegen 40 "$B/backends/cuda/codegen/tests/cuda_codegen_test" --gtest_brief=1
step bench 100 "$B/bench/gpu/cuda_bench" --json "$LOGS/bench.json"

# conform: the case list split round-robin over 4 processes (cases of one process run in
# order; compiling is the slow part, and the GPU takes several contexts).
"$T" conform --device cuda:0 --list 2>"$LOGS/conform-list.err" | grep -v ' cases (' >"$LOGS/ids.txt"
note "conform: $(wc -l <"$LOGS/ids.txt") cases"
PIDS=()
for k in 0 1 2 3; do
  awk -v k=$k 'NR % 4 == k {printf "--filter\n%s\n", $0}' "$LOGS/ids.txt" >"$LOGS/filters$k.txt"
  mapfile -t F <"$LOGS/filters$k.txt"
  if [ ${#F[@]} -gt 0 ]; then
    (step conform$k 150 "$T" conform --device cuda:0 --progress-every 100 \
       --json "$LOGS/conform$k.json" "${F[@]}") &
    PIDS+=($!)
  fi
done
for p in "${PIDS[@]}"; do wait "$p"; done
step cts 45 "$T" cts --device cuda:0 --gtest_brief=1
step nccl 30 "$B/backends/cuda/runtime/tests/cuda_nccl_test" --gtest_brief=1
if [ -n "${EXTRA_TIR_DIR:-}" ]; then
  for f in "$EXTRA_TIR_DIR"/*.tir; do
    [ -e "$f" ] && step "run-$(basename "$f" .tir)" 30 "$T" run "$f" --device cuda:0 --check
  done
fi
