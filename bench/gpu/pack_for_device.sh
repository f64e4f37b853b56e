#!/usr/bin/env bash
# Packs what the CUDA checks need into one archive, for a GPU machine that cannot build
# Tessera (the lent H200's image has CUDA, CMake and ninja but no LLVM 19): the CUDA test
# binaries, cuda_bench, the tessera CLI and tessera-cts (stripped), the fake libcuda / libnccl
# and the test cubin at their build-tree paths, and every shared library they need except the
# C and C++ runtimes (the device's newer glibc and libstdc++ run them).
# bench/gpu/run_carried_checks.sh unpacks and runs it there.
#
# Usage: bench/gpu/pack_for_device.sh [BUILD_DIR] [ARCHIVE]
#   defaults: build/default, .gpu/bundle.tar.xz (git-ignored through .git/info/exclude;
#   carry `.gpu`). About 45 MiB with xz -9 (two minutes on 2 cores).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build/default}
ARCHIVE=${2:-$ROOT/.gpu/bundle.tar.xz}
REL=${BUILD#"$ROOT"/}
BINS=(backends/cuda/runtime/tests/cuda_runtime_test backends/cuda/runtime/tests/cuda_nccl_test
      backends/cuda/codegen/tests/cuda_codegen_test bench/gpu/cuda_bench tools/tessera
      tools/tessera-cts)
DATA=(backends/cuda/runtime/tests/fake/libcuda.so.1 backends/cuda/runtime/tests/fake/libnccl.so.2
      backends/cuda/runtime/tests/test_kernels.sm_90.cubin)

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/lib"
for f in "${BINS[@]}" "${DATA[@]}"; do
  if [ ! -e "$BUILD/$f" ]; then
    echo "pack_for_device: $BUILD/$f is missing (build it first: scripts/build.sh default)" >&2
    exit 1
  fi
  mkdir -p "$STAGE/$REL/$(dirname "$f")"
  cp "$BUILD/$f" "$STAGE/$REL/$f"
done
for f in "${BINS[@]}"; do strip "$STAGE/$REL/$f"; done
for f in "${BINS[@]}"; do ldd "$BUILD/$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
mkdir -p "$(dirname "$ARCHIVE")"
echo "$REL" >"$STAGE/BUILD_DIR"
git -C "$ROOT" rev-parse HEAD >"$STAGE/COMMIT" 2>/dev/null || echo unknown >"$STAGE/COMMIT"
tar -C "$STAGE" -cf - . | xz -9 -T0 >"$ARCHIVE"
ls -la "$ARCHIVE"
