#!/usr/bin/env python3
"""Writes the matrix-op conformance cases conformance/kernels/matrix_*.tir (one file per input
type; run it from anywhere after editing the case table; the .tir files are committed so the
suite needs no Python). Each kernel computes D = C + A x B over an M x N x K problem with one
tile shape (tm x tn x tk), A and B in row- or column-major layout, walking the output tiles in
a grid-stride loop over subgroups, so any subgroup size gives the same D. Sizes that are not
multiples of the tile use `bounds`; a case whose sizes are multiples leaves them out. The
cases were written from docs/ir.md ("Matrix ops") alone, not from any implementation.
"""
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

ACC = {"f32": "f32", "f16": "f32", "bf16": "f32", "i8": "i32"}
GEN_IN = {"f32": "uniform(-1.0, 1.0)", "f16": "uniform(-2.0, 2.0)", "bf16": "uniform(-2.0, 2.0)",
          "i8": "uniform(-128, 127)"}
GEN_C = {"f32": "uniform(-4.0, 4.0)", "i32": "uniform(-1000000, 1000000)"}

# (name, tm, tn, tk, layout "AB" with r/c, M, N, K)
SHAPES = [
    ("t8x8x8_rr", 8, 8, 8, "rr", 13, 11, 19),
    ("t16x16x16_rr", 16, 16, 16, "rr", 37, 35, 41),
    ("t32x32x16_cc", 32, 32, 16, "cc", 45, 39, 50),
    ("t64x64x16_rc", 64, 64, 16, "rc", 67, 65, 33),
    ("t16x128x32_rr", 16, 128, 32, "rr", 9, 131, 45),  # 2 tiles: ~60 s on lavapipe with 4
    ("t8x32x128_rc", 8, 32, 128, "rc", 9, 33, 300),
    ("t16x16x64_exact_rr", 16, 16, 64, "rr", 32, 48, 128),
    ("t16x16x32_k4096_rr", 16, 16, 32, "rr", 19, 21, 4096),
    ("t32x16x64_k4093_cc", 32, 16, 64, "cc", 33, 17, 4093),
]

# The largest tiles: `a` operands too large for a target that replicates `a` per lane (the
# portable SIMT lowering: a 64 x 64 `a` is 4096 values per lane, past the Vulkan lowering's
# 2048) and the largest accumulator, 128 x 64 (1024 values per lane at subgroup size 8: one
# case ran past 90 s on lavapipe). A file of their own, so that a target's compile error for
# them (naming op, type and location, as the design allows) leaves the other cases running;
# conformance/xfail lists it where refused.
LARGE_A = [
    ("t128x64x8_cr", 128, 64, 8, "cr", 131, 70, 19),
    ("t64x8x64_cr", 64, 8, 64, "cr", 70, 12, 100),
    ("t128x32x64_rr", 128, 32, 64, "rr", 130, 35, 70),
]


def kernel(name, t, tm, tn, tk, layout, M, N, K, cgen=None, agen=None, bgen=None, grid=2, wg=64):
    acc = ACC[t]
    bounds = M % tm or N % tn or K % tk
    a_col, b_col = layout[0] == "c", layout[1] == "c"
    bnd = lambda r, c: f" bounds {r}, {c}" if bounds else ""
    L = []
    add = L.append
    add(f"kernel @{name}(%A: buffer<{t}, readonly>, %B: buffer<{t}, readonly>, "
        f"%C: buffer<{acc}, readonly>, %D: buffer<{acc}, writeonly>, %M: i32, %N: i32, %K: i32) {{")
    add("  %zero = const 0 : i32")
    add(f"  %tm = const {tm} : i32")
    add(f"  %tn = const {tn} : i32")
    add(f"  %tk = const {tk} : i32")
    add(f"  %tm1 = const {tm - 1} : i32")
    add(f"  %tn1 = const {tn - 1} : i32")
    add("  %wg = local_size.x : i32")
    add("  %sg = subgroup_size : i32")
    add("  %nsub = div %wg, %sg : i32")
    add("  %gid = group_id.x : i32")
    add("  %ngroups = num_groups.x : i32")
    add("  %sid = subgroup_id : i32")
    add("  %first0 = mul %gid, %nsub : i32")
    add("  %first = add %first0, %sid : i32")
    add("  %stride = mul %ngroups, %nsub : i32")
    add("  %mt0 = add %M, %tm1 : i32")
    add("  %mtiles = div %mt0, %tm : i32")
    add("  %nt0 = add %N, %tn1 : i32")
    add("  %ntiles = div %nt0, %tn : i32")
    add("  %tiles = mul %mtiles, %ntiles : i32")
    add("  for %t = %first to %tiles step %stride : i32 {")
    add("    %ti = div %t, %ntiles : i32")
    add("    %tj = rem %t, %ntiles : i32")
    add("    %row0 = mul %ti, %tm : i32")
    add("    %col0 = mul %tj, %tn : i32")
    add("    %rows = sub %M, %row0 : i32")
    add("    %cols = sub %N, %col0 : i32")
    add("    %crow = mul %row0, %N : i32")
    add("    %coff = add %crow, %col0 : i32")
    ctype = f"matrix<{acc}, {tm}, {tn}, acc>"
    add(f"    %init = matrix_load %C[%coff] stride %N{bnd('%rows', '%cols')} : {ctype}")
    add("    %acc = for %k0 = %zero to %K step %tk iter(%c = %init) : i32 {")
    add("      %ks = sub %K, %k0 : i32")
    atype, btype = f"matrix<{t}, {tm}, {tk}, a>", f"matrix<{t}, {tk}, {tn}, b>"
    if a_col:  # A stored K x M: element (i, k) at k*M + i
        add("      %ak = mul %k0, %M : i32")
        add("      %aoff = add %ak, %row0 : i32")
        add(f"      %a = matrix_load.col %A[%aoff] stride %M{bnd('%rows', '%ks')} : {atype}")
    else:
        add("      %ar = mul %row0, %K : i32")
        add("      %aoff = add %ar, %k0 : i32")
        add(f"      %a = matrix_load %A[%aoff] stride %K{bnd('%rows', '%ks')} : {atype}")
    if b_col:  # B stored N x K: element (k, j) at j*K + k
        add("      %bj = mul %col0, %K : i32")
        add("      %boff = add %bj, %k0 : i32")
        add(f"      %b = matrix_load.col %B[%boff] stride %K{bnd('%ks', '%cols')} : {btype}")
    else:
        add("      %bk = mul %k0, %N : i32")
        add("      %boff = add %bk, %col0 : i32")
        add(f"      %b = matrix_load %B[%boff] stride %N{bnd('%ks', '%cols')} : {btype}")
    add(f"      %c2 = matrix_mad %a, %b, %c : {atype}, {btype}, {ctype}")
    add("      yield %c2")
    add("    }")
    add(f"    matrix_store %acc, %D[%coff] stride %N{bnd('%rows', '%cols')} : {ctype}")
    add("  }")
    add("}")
    add("")
    add(f"launch @{name} grid({grid}) workgroup({wg}) seed({(M * 131 + N * 31 + K) % 1000}) {{")
    add(f"  %A[{M * K}] = {agen or GEN_IN[t]}")
    add(f"  %B[{K * N}] = {bgen or GEN_IN[t]}")
    add(f"  %C[{M * N}] = {cgen or GEN_C[acc]}")
    add(f"  %D[{M * N}] = fill(0)")
    add(f"  %M = {M}")
    add(f"  %N = {N}")
    add(f"  %K = {K}")
    add("}")
    return "\n".join(L) + "\n"


HEADER = """// Matrix-op conformance cases for {t} inputs, {acc} accumulation: D = C + A x B for each tile
// shape class (tm x tn x tk: square, tall, wide, long K; the largest tiles: matrix_large.tir),
// A and B row- or column-major (`_rc`: A row-major, B column-major), odd M, N, K with
// `bounds`, and K up to 4096. Judged per docs/ir.md "Matrix ops" (precision contract).
// Generated by conformance/kernels/matrix_cases.py; edit that, not this file.
"""


def write(t, extra=""):
    acc = ACC[t]
    text = HEADER.format(t=t, acc=acc)
    for (n, tm, tn, tk, lay, M, N, K) in SHAPES:
        text += "\n" + kernel(f"mx_{t}_{n}", t, tm, tn, tk, lay, M, N, K)
    text += extra
    (HERE / f"matrix_{t}.tir").write_text(text)


# Special values: NaN, +-inf, +-0, subnormals, +-max in A; B finite with |B| < 1, so that no
# product of a finite max overflows f32 (bf16 has f32's range). The contract (docs/ir.md)
# bounds |d - ref| by S, with the exact long double sum as ref: a device whose f32 product or
# partial sum overflows to inf while the exact sum is finite fails it, although no summation
# order can avoid that (a gap in the contract, reported with issue #13; this case stays clear).
def special(t):
    return "\n" + kernel(f"mx_{t}_special_a", t, 8, 8, 8, "rr", 18, 9, 8, cgen="fill(0.0)",
                          agen="special", bgen="uniform(-1.0, 1.0)")


# i8: every pair of extremes, and C near INT32_MAX so that the sum wraps modulo 2^32.
I8_WRAP = "\n" + kernel("mx_i8_wrap_k4096", "i8", 16, 16, 64, "rr", 17, 19, 4096,
                        cgen="uniform(2147000000, 2147483647)", agen="fill(127)",
                        bgen="uniform(100, 127)")
I8_SPECIAL = "\n" + kernel("mx_i8_special_a", "i8", 8, 8, 8, "cc", 14, 9, 16,
                           cgen="special", agen="special")

def write_large_a():
    text = HEADER_LARGE
    for t in ("f32", "f16", "bf16", "i8"):
        for (n, tm, tn, tk, lay, M, N, K) in LARGE_A:
            text += "\n" + kernel(f"mx_{t}_{n}", t, tm, tn, tk, lay, M, N, K)
    (HERE / "matrix_large.tir").write_text(text)


HEADER_LARGE = """// Matrix-op conformance cases with the largest tiles for every input type: the 128 x 64
// accumulator and `a` operands of 64 x 64 and 128 x 64 (4096 and 8192 elements); D = C + A x B
// as in matrix_<type>.tir.
// A target may refuse such shapes with a compile error naming the op, its type and location (docs/ir.md,
// "Matrix ops"); they are in a file of their own so that the refusal costs only these cases.
// Generated by conformance/kernels/matrix_cases.py; edit that, not this file.
"""

if __name__ == "__main__":
    write_large_a()
    for t in ("f32", "f16", "bf16"):
        write(t, special(t))
    write("i8", I8_WRAP + I8_SPECIAL)
