#!/usr/bin/env bash
# The ctest sdk_example_plugin: installs the build into a temporary prefix, builds
# examples/plugin from a copy outside the repository against that prefix only
# (find_package(Tessera)), then, with the installed tools: `tessera devices` lists mydev:0,
# `tessera cts --driver PLUGIN --device mydev:0` passes, and `tessera conform --device mydev:0`
# (plugin from TESSERA_DRIVER_PATH) passes with the target and profile the plugin declares;
# a skip list of its own (--skips-dir) is honoured.
# A C++ program linking Tessera::runtime builds from the package, and a pkg-config build of a
# C program against the installed C ABI loads the installed null plugin.
# Usage: scripts/test-sdk-example.sh BUILD_DIR CXX   (TESSERA_SDK_CONFORM_FILTER: a --filter)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
cxx=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

echo "== install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
test -f "$prefix/lib/cmake/Tessera/TesseraConfigVersion.cmake"
test -f "$prefix/include/tessera/hal_plugin.h"
test -x "$prefix/bin/tessera"

echo "== build examples/plugin from the install tree"
cp -r "$root/examples/plugin" "$tmp/src"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >"$tmp/configure.log"
cmake --build "$tmp/build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
plugin=$tmp/build/libtessera_mydev_plugin.so
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
[ "$exported" = "tsr_plugin_entry " ] || { echo "exports: $exported" >&2; exit 1; }

tessera=$prefix/bin/tessera
echo "== tessera devices --driver"
"$tessera" devices --driver "$plugin" | tee "$tmp/devices.txt"
grep -Eq '^ *mydev:0' "$tmp/devices.txt" || grep -q 'mydev:0' "$tmp/devices.txt"

echo "== tessera cts --driver ... --device mydev:0"
"$tessera" cts --driver "$plugin" --device mydev:0 --gtest_brief=1 | tail -5

echo "== tessera compile --target mydev --driver (the plugin's target, its stages dumped)"
"$tessera" compile "$prefix/share/tessera/examples/saxpy.tir" --target mydev --driver "$plugin" \
  --dump-dir "$tmp/dump"
ls "$tmp/dump"
test -s "$tmp/dump/0-kir.tir"
[ "$(find "$tmp/dump" -type f | wc -l)" -ge 2 ] # the kernel IR and the CPU stages after it

echo "== a plugin's own skip list (--skips-dir)"
mkdir -p "$tmp/skips"
echo 'CtsBuffers.*  the example pretends its buffers are not ready' >"$tmp/skips/mydev.txt"
"$tessera" cts --driver "$plugin" --device mydev:0 --skips-dir "$tmp/skips" \
  --gtest_filter='*CtsBuffers*' >"$tmp/skips.txt"
grep -q 'mydev declares: the example pretends its buffers are not ready' "$tmp/skips.txt" ||
  { cat "$tmp/skips.txt"; exit 1; }

echo "== tessera conform --device mydev:0 (TESSERA_DRIVER_PATH)"
# A vendor's expected-failure list dropped into the installed share/tessera/xfail is read
# (an installed tessera does not read the source tree's): the passing case is an xpass.
echo 'kernel/saxpy/*  demo entry: the installed xfail directory is the one read' \
  >"$prefix/share/tessera/xfail/mydev.txt"
filter=()
if [ -n "${TESSERA_SDK_CONFORM_FILTER:-}" ]; then filter=(--filter "$TESSERA_SDK_CONFORM_FILTER"); fi
TESSERA_DRIVER_PATH=$tmp/build TESSERA_CACHE_DIR=$tmp/cache "$tessera" conform \
  --device mydev:0 --progress-every 1000000 --json "$tmp/conform.json" "${filter[@]}" \
  | tee "$tmp/conform.txt" | grep -E '^\[mydev:0\]|pass|fail' | tail -4
grep -q '^\[mydev:0\] target mydev, profile full' "$tmp/conform.txt"
grep -Eq ' 0 fail, 0 xfail, 1 xpass' "$tmp/conform.txt" || { tail -5 "$tmp/conform.txt"; exit 1; }

echo "== a C++ program linking Tessera::runtime and Tessera::builtin_drivers"
mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
find_package(Tessera 0.1 CONFIG REQUIRED)
add_executable(consumer main.cpp)
set_target_properties(consumer PROPERTIES CXX_STANDARD 20)
target_link_libraries(consumer PRIVATE Tessera::runtime Tessera::builtin_drivers)
CMAKE
cat >"$tmp/consumer/main.cpp" <<'CPP'
#include "backends/builtin_drivers.h"
#include "backends/target.h"
#include <cstdio>
int main() {
  tsr_registry_t r = nullptr;
  if (tsr_registry_create(&r))
    return 1;
  tsr_status_free(tsr_registry_register_builtin_drivers(r));
  uint32_t n = 0;
  tsr_status_free(tsr_registry_device_count(r, &n));
  std::printf("devices %u, targets %s\n", n, tessera::defaultTargets().names().c_str());
  tsr_registry_release(r);
  return n > 0 ? 0 : 1;
}
CPP
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >"$tmp/consumer.log"
cmake --build "$tmp/consumer/build" >>"$tmp/consumer.log" || { cat "$tmp/consumer.log"; exit 1; }
"$tmp/consumer/build/consumer" | tee "$tmp/consumer.txt"
grep -q 'targets cpu' "$tmp/consumer.txt"

echo "== a C program through pkg-config"
cat >"$tmp/load.c" <<'C'
#include <stdio.h>
#include "tessera/hal_plugin.h"
int main(int argc, char **argv) {
  tsr_registry_t r = NULL;
  uint32_t plugins = 0, devices = 0;
  (void)argc;
  if (tsr_registry_create(&r) || tsr_registry_load_plugins(r, argv[1]) ||
      tsr_registry_plugin_count(r, &plugins) || tsr_registry_device_count(r, &devices))
    return 1;
  printf("plugins %u devices %u\n", plugins, devices);
  tsr_registry_release(r);
  return plugins == 1 ? 0 : 1;
}
C
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror "$tmp/load.c" -o "$tmp/load" $(pkg-config --cflags --libs tessera)
"$tmp/load" "$prefix/lib/tessera/libtessera_null_driver.so"
echo "sdk example: installed, built out of tree, cts and conform passed"
