#!/usr/bin/env bash
# The ctest sdk_new_backend_script: runs scripts/new-backend.sh into a temporary tree, checks
# that no "null" name survived in code, compiles every file of the copy (-Wall -Wextra
# -Werror), links its plugin against the build's libraries, runs the copy's own skeleton test
# against it, and loads it with `tessera devices --driver`, which must list acme_npu:0.
# Usage: scripts/test-new-backend.sh BUILD_DIR CXX
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
cxx=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/new-backend.sh" acme_npu "$tmp/backends/acme_npu" >/dev/null
# A second run into the same place refuses instead of overwriting.
if "$root/scripts/new-backend.sh" acme_npu "$tmp/backends/acme_npu" 2>/dev/null; then
  echo "new-backend.sh overwrote an existing folder" >&2
  exit 1
fi
cd "$tmp/backends/acme_npu"
ls
for f in acme_npu_driver.h acme_npu_driver.cpp acme_npu_target.h acme_npu_target.cpp \
  plugin_entry.cpp acme_npu_skeleton_test.cpp CMakeLists.txt README.md; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
# Names left behind: any null-derived identifier or string (nullptr and NULL are C++/C).
if grep -nE '\bnull\b|tsr_null|tessera_null|Null(Target|Skeleton|Plugin)|backends/null' \
  ./*.cpp ./*.h CMakeLists.txt | grep -vE 'nullptr|NULL|nullopt'; then
  echo "new-backend.sh left the names above" >&2
  exit 1
fi
grep -q 'acme_npu driver: %s not implemented' acme_npu_driver.cpp
grep -q 'return "acme_npu";' acme_npu_target.cpp
flags=(-std=c++20 -Wall -Wextra -Werror -fPIC -I"$tmp" -I"$root" -I"$root/hal/include"
)
for f in acme_npu_driver.cpp acme_npu_target.cpp plugin_entry.cpp; do
  "$cxx" "${flags[@]}" -fvisibility=hidden -c "$f" -o "$tmp/${f%.cpp}.o"
done
"$cxx" -shared -o "$tmp/libtessera_acme_npu_driver.so" "$tmp"/*.o -Wl,--no-undefined \
  -Wl,--exclude-libs,ALL "$build/backends/libtessera_target.a" "$build/ir/libtessera_ir.a" \
  "$build/hal/libtessera_hal_base.a"
# The copy's own skeleton test, against its own plugin: every entry still "not implemented".
"$cxx" "${flags[@]}" -DTSR_ACME_NPU_PLUGIN_PATH="\"$tmp/libtessera_acme_npu_driver.so\"" \
  acme_npu_skeleton_test.cpp acme_npu_driver.cpp acme_npu_target.cpp -o "$tmp/skeleton_test" \
  "$build/backends/libtessera_plugin_targets.a" "$build/backends/libtessera_target.a" \
  "$build/hal/libtessera_hal.a" "$build/ir/libtessera_ir.a" "$build/hal/libtessera_hal_base.a" \
  -lgtest_main -lgtest -lpthread -ldl
"$tmp/skeleton_test" --gtest_brief=1
out=$("$build/tools/tessera" devices --driver "$tmp/libtessera_acme_npu_driver.so")
echo "$out"
grep -q 'acme_npu:0' <<<"$out"
echo "new-backend.sh: the acme_npu copy compiles, links and loads"
