#!/usr/bin/env bash
# Backend names stay in the target registry (issue #12): the front ends and the runtime pick
# a compiler, a profile or a format only through backends/target.h, so none of them may spell
# a backend's name as a string literal. Run by ctest (backend_names_only_in_registry).
#
# usage: scripts/check_backend_names.sh [ROOT]   exit 1 listing every offending line
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
hits=$(grep -nE '"(vulkan|cuda|rocm|cpu|ptx|hsaco|spirv|spirv-vulkan|vulkan-spirv|rocm-hsaco)"' \
  runtime/src/* runtime/include/tessera/* tools/*.cpp tools/*.h tools/fuzz/* \
  conformance/*.cpp conformance/*.h 2>/dev/null)
if [[ -n $hits ]]; then
  echo "backend names outside the target registry (use backends/target.h instead):"
  echo "$hits"
  exit 1
fi
echo "no backend name outside the registry"
