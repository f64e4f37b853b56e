#!/usr/bin/env python3
"""Enforces the layering rules of ARCHITECTURE.md on #include lines.

  * ir/ never includes hal/ and hal/ never includes ir/;
  * a backend never includes another backend (backends/llvm and backends/spirv are the
    shared emitters every backend may use, backends/simt_runtime the shared half of the
    CUDA and ROCm drivers, and the headers directly in backends/ -- formats
    such as gpu_module.h -- are contracts every backend may use; builtin_drivers.h, which
    names several backends, is not);
  * backends/*/codegen never includes a vendor runtime header.

Usage: check_layering.py [ROOT]   (default: the repository root). Exit 1 on any violation,
printing `layering: FILE:LINE: rule` per violation.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCES = {".h", ".hpp", ".c", ".cc", ".cpp", ".def", ".inc"}
SHARED_BACKENDS = {"llvm", "spirv", "simt_runtime"}
VENDOR = re.compile(r"^(cuda\.h|cuda_runtime|cudaTypedefs|nccl|hip/|hsa/|vulkan/|CL/|level_zero/|ze_api|rccl)")


def violations(root: pathlib.Path):
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file() or "build" in path.relative_to(root).parts:
            continue
        rel = path.relative_to(root)
        top = rel.parts[0]
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = f"{rel}:{lineno}"
            if top == "ir" and (inc.startswith("hal/") or inc.startswith("tessera/hal")):
                yield f"{where}: ir/ must not include hal/ ({inc})"
            if top == "hal" and inc.startswith("ir/"):
                yield f"{where}: hal/ must not include ir/ ({inc})"
            if top == "backends" and len(rel.parts) > 2:
                mine = rel.parts[1]
                if inc.startswith("backends/"):
                    other = inc.split("/")[1]
                    contract = inc.count("/") == 1 and other != "builtin_drivers.h"
                    if other != mine and other not in SHARED_BACKENDS and not contract:
                        yield f"{where}: backend '{mine}' must not include backend '{other}' ({inc})"
                if rel.parts[2] == "codegen" and VENDOR.match(inc):
                    yield f"{where}: codegen must not include a vendor runtime header ({inc})"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    found = list(violations(root.resolve()))
    for v in found:
        print(f"layering: {v}")
    if not found:
        print("layering: ok")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
