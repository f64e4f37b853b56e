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
# grep hides ninja's per-file progress (and may find nothing to print); with pipefail the
# pipeline's status is the build's.
if ! cmake --build --preset "$preset" -- -j"$jobs" | { grep -v '^\[[0-9]*/[0-9]*\] ' || true; }; then
  echo "build.sh: building preset '$preset' failed (errors above)" >&2
  exit 1
fi
