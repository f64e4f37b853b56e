#!/usr/bin/env bash
# Makes `import tessera` and torch.compile(..., backend="tessera") work in the Python that
# run.sh and test.sh use ($TESSERA_PYTHON, default python3), for this source checkout, in
# milliseconds and without building anything:
#   - tessera-dev.pth in that Python's site-packages puts <repo>/python on sys.path (the
#     package's pure-Python files are used in place, edits take effect at once);
#   - tessera-0.1.0.dist-info/ next to it registers the distribution and its entry point
#     [torch_dynamo_backends] tessera = tessera.torch:tessera_backend (torch finds backends
#     through importlib.metadata);
#   - the native module tessera._C is the one scripts/build.sh built: tessera/__init__.py
#     loads it from build/default/python/tessera/ ($TESSERA_BUILD_DIR picks another build).
# A no-op when the files are already there with the same contents. `pip install ./python`
# is the standalone alternative (it builds the C++ itself); pip uninstall tessera removes
# either kind of install.
# Usage: scripts/install-python.sh [--uninstall]
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
PYTHON="${TESSERA_PYTHON:-$(command -v python3)}"
site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -w "$site" ]; then
  site=$("$PYTHON" -m site --user-site)
  mkdir -p "$site"
fi
pth="$site/tessera-dev.pth"
info="$site/tessera-0.1.0.dist-info"

if [ "${1:-}" = "--uninstall" ]; then
  rm -rf "$pth" "$info"
  echo "install-python: removed the checkout install from $site"
  exit 0
fi

# A wheel install (pip install ./python) owns site-packages/tessera/, which would shadow the
# checkout: leave it alone and say so.
if [ -d "$site/tessera" ]; then
  echo "install-python: note: $site/tessera is a pip-installed tessera; it shadows this" \
       "checkout (pip uninstall tessera to use the checkout)" >&2
fi

want_pth="$repo/python"
want_meta=$'Metadata-Version: 2.1\nName: tessera\nVersion: 0.1.0\nSummary: Tessera (checkout install: '"$repo"$')\n'
want_eps=$'[torch_dynamo_backends]\ntessera = tessera.torch:tessera_backend\n'
same() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
if same "$pth" "$want_pth" && same "$info/METADATA" "${want_meta%$'\n'}" &&
   same "$info/entry_points.txt" "${want_eps%$'\n'}"; then
  exit 0
fi
mkdir -p "$info"
printf '%s\n' "$want_pth" >"$pth"
printf '%s' "$want_meta" >"$info/METADATA"
printf '%s' "$want_eps" >"$info/entry_points.txt"
printf 'tessera-scripts\n' >"$info/INSTALLER"
# RECORD lists what pip uninstall removes.
printf '%s,,\n' "$(basename "$pth")" "$(basename "$info")/METADATA" \
  "$(basename "$info")/entry_points.txt" "$(basename "$info")/INSTALLER" \
  "$(basename "$info")/RECORD" >"$info/RECORD"
echo "install-python: tessera (checkout $repo) installed into $site"
