#!/usr/bin/env bash
# Configures (once) and builds one CMake preset with ninja. Used by run.sh and test.sh.
# Usage: scripts/build.sh [PRESET]   (default: default)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
jobs="${TESSERA_JOBS:-$(nproc)}"
if [ ! -f "build/$preset/build.ninja" ]; then
  echo "== configuring preset '$preset'"
  cmake --preset "$preset" >/dev/null
fi
echo "== building preset '$preset' (-j$jobs)"
cmake --build --preset "$preset" -- -j"$jobs" | grep -v '^\[[0-9]*/[0-9]*\] ' || true
# grep hides ninja's per-file progress; the build's own status decides success.
test "${PIPESTATUS[0]}" -eq 0
