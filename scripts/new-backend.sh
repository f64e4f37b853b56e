#!/usr/bin/env bash
# Starts a port: copies the porting skeleton backends/null (driver, target, plugin entry,
# skeleton test, README) to a new backend folder with every name replaced: files, targets,
# symbols (tsr_null_driver, tessera::null, NullTarget), messages ("null driver: ..."), the
# backend and format strings. The copy builds and answers UNIMPLEMENTED everywhere, like null.
# Usage: scripts/new-backend.sh NAME [DEST]   NAME: [a-z][a-z0-9_]*; DEST: default backends/NAME
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/new-backend.sh NAME [DEST]" >&2
  exit 2
fi
name=$1
dest=${2:-$root/backends/$name}
if ! [[ $name =~ ^[a-z][a-z0-9_]{0,30}$ ]]; then
  echo "new-backend.sh: '$name' is not a backend name ([a-z][a-z0-9_]*, at most 31 characters)" >&2
  exit 2
fi
if [ "$name" = null ]; then
  echo "new-backend.sh: 'null' is the skeleton itself; choose another name" >&2
  exit 2
fi
if [ -e "$dest" ]; then
  echo "new-backend.sh: $dest already exists; not overwriting it" >&2
  exit 1
fi
upper=$(tr '[:lower:]' '[:upper:]' <<<"$name")
camel=$(sed -E 's/(^|_)([a-z0-9])/\U\2/g' <<<"$name")

mkdir -p "$dest"
for src in "$root"/backends/null/*; do
  base=$(basename "$src")
  out=$dest/${base//null/$name}
  sed -E \
    -e "s#backends/null#backends/$name#g" \
    -e "s#tsr_null_driver#tsr_${name}_driver#g" \
    -e "s#tessera_null#tessera_${name}#g" \
    -e "s#null_(driver|target|skeleton_test)#${name}_\1#g" \
    -e "s#tessera::null\b#tessera::${name}#g" \
    -e "s#\bnull::#${name}::#g" \
    -e "s#NULL_NULL_DRIVER#${upper}_${upper}_DRIVER#g" \
    -e "s#TSR_NULL_PLUGIN_PATH#TSR_${upper}_PLUGIN_PATH#g" \
    -e "s#\bNull(Target|Skeleton|Plugin)\b#${camel}\1#g" \
    -e "s#kNullDriver#k${camel}Driver#g" \
    -e "s#\"null\"#\"${name}\"#g" \
    -e "s#'null'#'${name}'#g" \
    -e "s#\"null:0\"#\"${name}:0\"#g" \
    -e "s#null:0#${name}:0#g" \
    -e "s#null-object#${name}-object#g" \
    -e "s#\bnull (driver|target)\b#${name} \1#g" \
    "$src" >"$out"
done
cat <<MSG
new-backend.sh: created $dest from backends/null (backend '$name', devices $name:0 ...).
Next: add 'add_subdirectory($name)' to backends/CMakeLists.txt, build, and run
  tessera cts --driver build/default/backends/$name/libtessera_${name}_driver.so
then fill the stubs top to bottom (docs/porting.md).
MSG
