#!/usr/bin/env bash
# Dumps every stage of every ir/examples/*.tir and conformance/kernels/*.tir for every arch
# of the SIMT targets (ptx: sm_80, sm_89, sm_90, sm_90a; hsaco: gfx90a, gfx942, gfx1100) with
# two `tessera` binaries and compares the folders byte for byte (diff -r). Used to prove
# that a refactoring of the GPU pipeline changes no output.
# Usage: scripts/check_simt_stages.sh OLD_TESSERA [NEW_TESSERA]
#   (NEW defaults to build/default/tools/tessera). Exit 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
old="${1:?usage: $0 OLD_TESSERA [NEW_TESSERA]}"
new="${2:-build/default/tools/tessera}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for bin in old new; do
  exe="${!bin}"
  for f in ir/examples/*.tir conformance/kernels/*.tir; do
    name="$(basename "$(dirname "$f")").$(basename "$f" .tir)"
    for ta in ptx:sm_80 ptx:sm_89 ptx:sm_90 ptx:sm_90a hsaco:gfx90a hsaco:gfx942 hsaco:gfx1100; do
      target="${ta%%:*}" arch="${ta#*:}"
      "$exe" compile "$f" --target "$target" --arch "$arch" \
        --dump-dir "$out/$bin/$name.$arch" >"$out/log" 2>&1 ||
        { cat "$out/log" >&2; echo "$exe failed on $f ($ta)" >&2; exit 1; }
    done
  done
done
files="$(find "$out/old" -type f | wc -l)"
if diff -r "$out/old" "$out/new"; then
  echo "simt stages: identical ($files files)"
else
  echo "simt stages: DIFFERENT" >&2
  exit 1
fi
