#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test. Exit status non-zero on any failure.
# Usage: ./test.sh [--preset default|debug|asan|tsan] [--fuzz-seconds N] [--help]
set -euo pipefail
cd "$(dirname "$0")"

preset=default
fuzz_seconds="${TESSERA_FUZZ_SECONDS:-60}"
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset="${2:?--preset needs a name}"; shift 2 ;;
    --preset=*) preset="${1#*=}"; shift ;;
    --fuzz-seconds) fuzz_seconds="${2:?--fuzz-seconds needs a number}"; shift 2 ;;
    -h|--help)
      sed -n '2,3p' "$0" | sed 's/^# //'
      echo "Presets: default (RelWithDebInfo, what CI runs), debug, asan (ASan+UBSan), tsan."
      echo "The parser fuzzer and tessera fuzz each run for --fuzz-seconds (default 60, env TESSERA_FUZZ_SECONDS) in the default preset."
      exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$preset" in default|debug|asan|tsan) ;; *) echo "test.sh: unknown preset '$preset'" >&2; exit 2 ;; esac

start=$(date +%s)
./scripts/setup-deps.sh
# The Vulkan loader wants a private runtime directory; without one it prints noise per process.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  export XDG_RUNTIME_DIR="$(mktemp -d)"
  chmod 0700 "$XDG_RUNTIME_DIR"
fi
PYTHON="${TESSERA_PYTHON:-$(command -v python3)}"

echo "== layering check"
"$PYTHON" scripts/check_layering.py

./scripts/build.sh "$preset"

# Sanitizer suppressions (third-party code only; see the files) for every process the tests
# start, ctest's and pytest's alike.
case "$preset" in
  asan) export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0" ;;
  tsan) export TSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/tsan.supp" ;;
esac

echo "== ctest (preset $preset)"
ctest --preset "$preset" -j"$(nproc)" --timeout 900

echo "== pytest"
TESSERA_BIN="$PWD/build/$preset/tools/tessera" "$PYTHON" -m pytest -q scripts/tests tools/tests conformance/tests

# The Python package (python/tests, issue #14): against this preset's tessera._C, which
# sanitizer presets do not build (a plain interpreter cannot load an ASan module).
if compgen -G "build/$preset/python/tessera/_C*.so" >/dev/null; then
  ./scripts/install-python.sh
  echo "== pytest python/tests"
  TESSERA_BUILD_DIR="$PWD/build/$preset" "$PYTHON" -m pytest -q python/tests
elif [ "$preset" = default ]; then
  # setup-deps installs nanobind before the build: a default build without the module is broken.
  echo "test.sh: build/default has no tessera._C (was nanobind importable at configure time?)" >&2
  exit 1
else
  echo "== python/tests skipped: build/$preset has no tessera._C (a sanitizer preset: a plain interpreter cannot load a sanitized module)"
fi

if [ "$preset" = default ] && [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing the IR parser for ${fuzz_seconds}s"
  fuzz_bin=build/default/ir/tests/fuzz_parser
  corpus=$(mktemp -d)
  artifacts=build/fuzz-artifacts
  mkdir -p "$artifacts"
  cp ir/tests/fuzz_corpus/* ir/examples/*.tir "$corpus"/
  log=build/fuzz-parser.log
  if ! "$fuzz_bin" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: the parser fuzzer found a crash, leak or timeout; input saved in $artifacts/" >&2
    rm -rf "$corpus"
    exit 1
  fi
  rm -rf "$corpus"
  grep -E 'stat::number_of_executed_units|Done' "$log" | tail -n 2 || true

  # Differential fuzzing (#10, #11): random kernels on the interpreter and on every device
  # here; a mismatch is shrunk and saved, and fails the run. Seeds 1, 2, ... (TESSERA_FUZZ_SEED
  # changes the start) so that a failure reproduces.
  tessera_bin=build/default/tools/tessera
  fuzz_devices=(--device cpu:0)
  if "$tessera_bin" devices | grep -q '^vulkan:0'; then fuzz_devices+=(--device vulkan:0); fi
  echo "== differential fuzzing (${fuzz_devices[*]}) for ${fuzz_seconds}s"
  log=build/fuzz-kernels.log
  if ! "$tessera_bin" fuzz "${fuzz_devices[@]}" --seconds "$fuzz_seconds" --seed "${TESSERA_FUZZ_SEED:-1}" \
       --shrink-seconds 60 --max-shrinks 2 --out build/fuzz-kernels >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: tessera fuzz found a mismatch (or crashed); minimised kernels in build/fuzz-kernels/" >&2
    exit 1
  fi
  tail -n 1 "$log"

  # #10: small hostile kernels (out-of-range indices, zero divisors, steps <= 0) on cpu:0 in
  # checked mode: every fault must come back as a status, never crash or hang the process.
  echo "== hostile kernels on cpu:0, checked bounds, for $((fuzz_seconds / 2))s"
  log=build/fuzz-hostile.log
  if ! "$tessera_bin" fuzz --device cpu:0 --hostile --bounds checked --max-ops 40 \
       --seconds "$((fuzz_seconds / 2))" --seed "${TESSERA_FUZZ_SEED:-1}" \
       --shrink-seconds 60 --max-shrinks 2 --out build/fuzz-hostile >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: a hostile kernel crashed, hung or mismatched on cpu:0; see build/fuzz-hostile/" >&2
    exit 1
  fi
  tail -n 1 "$log"
fi
echo "== all tests passed (preset $preset, $(( $(date +%s) - start ))s)"
