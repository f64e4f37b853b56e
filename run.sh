#!/usr/bin/env bash
# Installs what is missing, builds, then runs the main job.
#   ./run.sh            verify every IR example, run it on the fp64 reference interpreter, then
#                       on every available device (cpu:0, vulkan:0 on lavapipe, ...) with
#                       --check, then `tessera cts` and `tessera conform` on every device
#   ./run.sh python SCRIPT.py [ARGS...]
#                       run a script with the Python that has tessera installed
#                       ($TESSERA_PYTHON, default python3; scripts/install-python.sh)
#   ./run.sh ARGS...    run `tessera ARGS...` (e.g. ./run.sh ir print ir/examples/saxpy.tir)
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup-deps.sh
./scripts/build.sh default >&2
# The Vulkan loader wants a private runtime directory; without one it prints noise per process.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  export XDG_RUNTIME_DIR="$(mktemp -d)"
  chmod 0700 "$XDG_RUNTIME_DIR"
fi
if [ "${1:-}" = python ]; then
  shift
  ./scripts/install-python.sh >&2
  exec "${TESSERA_PYTHON:-python3}" "$@"
fi
tessera=build/default/tools/tessera
if [ $# -gt 0 ]; then
  exec "$tessera" "$@"
fi
echo "== verifying IR examples"
"$tessera" ir verify ir/examples/*.tir
echo "== running IR examples on the fp64 reference interpreter"
for f in ir/examples/*.tir; do
  echo "-- $f"
  "$tessera" interp "$f"
done
echo "== devices"
"$tessera" devices
status=0
devices=$("$tessera" devices --json | "${TESSERA_PYTHON:-python3}" -c \
  'import json, sys; print(" ".join(d["name"] for d in json.load(sys.stdin)["devices"]))')
for dev in $devices; do
  echo "== running IR examples on $dev, checked against the interpreter"
  for f in ir/examples/*.tir; do
    "$tessera" run "$f" --device "$dev" --check || status=1
  done
done
echo "== HAL conformance suite (tessera cts) on every available device"
"$tessera" cts --gtest_brief=1 || status=1
echo "== conformance suite on every available device"
"$tessera" conform -j 2 || status=1
exit "$status"
