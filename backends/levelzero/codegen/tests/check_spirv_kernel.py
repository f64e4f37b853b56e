#!/usr/bin/env python3
"""Checks Level Zero modules with the external SPIR-V tools (a ctest driver).

Every module written by levelzero_dump_modules (every .tir of ir/examples and
conformance/kernels, in every bounds mode and both profiles) and every one that
`tessera compile --target spirv-kernel` writes (default and strict profile) must pass
`spirv-val --target-env opencl2.2` AND be read back by `llvm-spirv-15 -r` without error.
(A module whose only spirv-val error is the Int64Atomics capability, which spirv-val's OpenCL
environment refuses because it models no OpenCL extension, is validated for spv1.2 instead,
as the in-process validation does, and counted in the summary.) matrix_large.tir is skipped:
no target without matrix hardware compiles it (levelzero_codegen_test checks its error).
Exit 0 when all pass, 1 on any failure (each one printed), 77 (ctest SKIP) when a tool is
missing, saying which.

--self-test proves the checks can fail: a valid kernel module with a deliberately broken
instruction (an OpIAdd reading an id that is never defined) must be rejected by both tools.
(A float-typed OpIAdd is not enough: llvm-spirv reads it without complaint.)
"""
import argparse
import pathlib
import shutil
import struct
import subprocess
import sys

SKIP = 77
# Too large for the portable matrix lowering on every target without matrix hardware (a
# clear compile error, checked by levelzero_codegen_test).
TOO_LARGE = {"matrix_large.tir"}
INT64_ATOMICS = "Capability Int64Atomics is not allowed by OpenCL"
fallback = set()  # modules validated for SPIR-V 1.2 instead (64-bit atomics)


def tools():
    val, rev = shutil.which("spirv-val"), shutil.which("llvm-spirv-15")
    missing = [n for n, p in (("spirv-val", val), ("llvm-spirv-15", rev)) if not p]
    if missing:
        print(f"SKIP: {' and '.join(missing)} not found on PATH: the external SPIR-V checks "
              "need spirv-tools and llvm-spirv-15 (scripts/setup-deps.sh installs them)")
        sys.exit(SKIP)
    return val, rev


def check(spv: pathlib.Path, val: str, rev: str) -> list:
    """The errors of both tools on one module (empty when both accept it)."""
    errors = []
    r = subprocess.run([val, "--target-env", "opencl2.2", str(spv)], capture_output=True, text=True)
    if r.returncode != 0 and INT64_ATOMICS in r.stdout + r.stderr:
        # spirv-val's OpenCL environment models no extension (cl_khr_int64_base_atomics):
        # such a module gets every other SPIR-V 1.2 rule, as the in-process validation does.
        fallback.add(spv.name)
        r = subprocess.run([val, "--target-env", "spv1.2", str(spv)], capture_output=True,
                           text=True)
    if r.returncode != 0:
        errors.append(f"{spv.name}: spirv-val --target-env opencl2.2: {(r.stdout + r.stderr).strip()}")
    bc = spv.with_suffix(".bc")
    r = subprocess.run([rev, "-r", str(spv), "-o", str(bc)], capture_output=True, text=True)
    if r.returncode != 0 or (r.stdout + r.stderr).strip():
        lines = (r.stdout + r.stderr).strip().splitlines()[:3]  # not a whole stack dump
        errors.append(f"{spv.name}: llvm-spirv-15 -r (exit {r.returncode}): " + " | ".join(lines))
    bc.unlink(missing_ok=True)
    return errors


# A minimal Kernel-flavour module (SPIR-V 1.2), assembled by hand, with one instruction that
# can be made invalid: `%sum = OpIAdd %uint %a %a`; the self-test makes one operand %99.
def minimal_module(broken: bool) -> bytes:
    def inst(op, *words):
        return [(len(words) + 1) << 16 | op, *words]

    def string(s):
        b = s.encode() + b"\0"
        b += b"\0" * (-len(b) % 4)
        return list(struct.unpack(f"<{len(b) // 4}I", b))

    void, uint, fn_t, fn, a, sum_, label, flt = 1, 2, 3, 4, 5, 6, 7, 8
    w = [0x07230203, 0x00010200, 0, 9, 0]
    for cap in (4, 6, 11):  # Addresses, Kernel, Int64
        w += inst(17, cap)
    w += inst(14, 2, 2)  # OpMemoryModel Physical64 OpenCL
    w += inst(15, 6, fn, *string("k"))  # OpEntryPoint Kernel
    w += inst(19, void) + inst(21, uint, 32, 0) + inst(22, flt, 32)
    w += inst(33, fn_t, void, uint)
    w += inst(54, void, fn, 0, fn_t) + inst(55, uint, a) + inst(248, label)
    w += inst(128, uint, sum_, 99 if broken else a, a)  # OpIAdd
    w += inst(253) + inst(56)
    return struct.pack(f"<{len(w)}I", *w)


def self_test(work: pathlib.Path, val: str, rev: str) -> int:
    work.mkdir(parents=True, exist_ok=True)
    good, bad = work / "good.spv", work / "broken.spv"
    good.write_bytes(minimal_module(False))
    bad.write_bytes(minimal_module(True))
    ok = check(good, val, rev)
    if ok:
        print("FAIL: the valid minimal module is rejected:\n  " + "\n  ".join(ok))
        return 1
    errs = check(bad, val, rev)
    for tool in ("spirv-val", "llvm-spirv-15"):
        if not any(f": {tool}" in e for e in errs):
            print(f"FAIL: {tool} accepted the broken module")
            return 1
    print("ok: the valid module passes; the broken one is rejected by both tools:")
    print("  " + "\n  ".join(e.splitlines()[0] for e in errs))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", help="the tessera command")
    ap.add_argument("--dump", help="levelzero_dump_modules")
    ap.add_argument("--source", help="the source tree (ir/examples, conformance/kernels)")
    ap.add_argument("--work", required=True, help="a scratch folder for the modules")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    val, rev = tools()
    work = pathlib.Path(args.work)
    if args.self_test:
        return self_test(work, val, rev)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    r = subprocess.run([args.dump, str(work)], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: levelzero_dump_modules: {r.stdout}{r.stderr}")
        return 1
    src = pathlib.Path(args.source)
    cli = []
    for d in ("ir/examples", "conformance/kernels"):
        for tir in sorted((src / d).glob("*.tir")):
            if tir.name in TOO_LARGE:
                continue
            for profile in ("default", "strict"):
                out = work / f"cli_{tir.parent.name}_{tir.stem}.{profile}.spv"
                r = subprocess.run([args.tessera, "compile", str(tir), "--target", "spirv-kernel",
                                    "--profile", profile, "-o", str(out)],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL: tessera compile {tir} --profile {profile}: {r.stderr.strip()}")
                    return 1
                cli.append(out)
    modules = sorted(work.glob("*.spv"))
    errors = []
    for spv in modules:
        errors += check(spv, val, rev)
    for e in errors:
        print("FAIL:", e)
    print(f"{len(modules)} modules ({len(cli)} through `tessera compile`): "
          f"{len(modules) - len({e.split(':')[0] for e in errors})} pass both tools "
          f"({len(fallback)} with 64-bit atomics validated for SPIR-V 1.2, not opencl2.2)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
