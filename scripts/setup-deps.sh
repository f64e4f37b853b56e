#!/usr/bin/env bash
# Installs every system and Python package Tessera needs on a fresh Debian 12 machine.
# Idempotent: when everything is present it only runs dpkg-query and a pip import check
# (well under a second). It must never install anything outside apt and pip.
set -euo pipefail

# Compiler toolchain, build tools and test frameworks (needed by every build).
PKGS_CORE=(
  cmake ninja-build ccache g++ libgtest-dev libxxhash-dev nlohmann-json3-dev libcli11-dev
  llvm-19-dev clang-19 lld-19 libclang-rt-19-dev libomp-19-dev libzstd-dev clang-tidy-19 clang-format-19
  libopenblas-dev
)
# Device runtimes and SDKs used by the backends (all loaded with dlopen at run time).
PKGS_DEVICES=(
  libvulkan-dev mesa-vulkan-drivers vulkan-tools spirv-tools spirv-headers glslang-tools
  vulkan-validationlayers rocm-device-libs libamdhip64-dev
  pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers clinfo
  libze1 libze-dev llvm-spirv-15
  libopenmpi-dev openmpi-bin
)
# Test tools: headless Chromium renders the HTML conformance report (conformance/tests).
PKGS_TEST=(chromium)
# Python: tests, the package's build tools (nanobind, scikit-build-core), torch for the
# torch.compile backend (issue #14), and Intel MKL (libmkl_rt in the prefix's lib/, which
# the CPU driver's extern GEMM loads: docs/hal.md, "Extern kernels"). PY_MODULES are the
# import names checked on the fast path; PY_DISTS the distributions with no module (mkl).
PY_PKGS=(numpy pytest torch nanobind scikit-build-core mkl)
PY_MODULES="'numpy', 'pytest', 'torch', 'nanobind', 'scikit_build_core'"
PY_DISTS="'mkl',"

PYTHON="${TESSERA_PYTHON:-$(command -v python3)}"

# One dpkg-query for all packages: the no-op path must stay fast.
all=("${PKGS_CORE[@]}" "${PKGS_DEVICES[@]}" "${PKGS_TEST[@]}")
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${all[@]}" 2>/dev/null |
            awk '$NF == "installed" && $(NF-1) == "ok" {sub(/:.*/, "", $1); print $1}' || true)
missing=()
for p in "${all[@]}"; do
  grep -qx "$p" <<<"$installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup-deps: installing ${#missing[@]} apt package(s): ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py_check="import importlib.util as u, importlib.metadata as md, sys
def have(d):
    try:
        return bool(md.version(d))
    except md.PackageNotFoundError:
        return False
sys.exit(not (all(u.find_spec(m) for m in ($PY_MODULES)) and all(have(d) for d in ($PY_DISTS))))"
if ! "$PYTHON" -c "$py_check" 2>/dev/null; then
  echo "setup-deps: installing Python packages: ${PY_PKGS[*]}"
  "$PYTHON" -m pip install -q "${PY_PKGS[@]}"
fi
