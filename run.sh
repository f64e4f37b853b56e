#!/usr/bin/env bash
# Installs what is missing, builds, then runs the main job.
#   ./run.sh            verify every IR example, run it on the fp64 reference interpreter, then
#                       on cpu:0 with --check, then `tessera conform` on every available device
#   ./run.sh ARGS...    run `tessera ARGS...` (e.g. ./run.sh ir print ir/examples/saxpy.tir)
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup-deps.sh
./scripts/build.sh default >&2
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
echo "== running IR examples on cpu:0, checked against the interpreter"
status=0
for f in ir/examples/*.tir; do
  "$tessera" run "$f" --device cpu:0 --check || status=1
done
echo "== conformance suite on every available device"
"$tessera" conform || status=1
exit "$status"
